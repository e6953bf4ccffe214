/**
 * Secrets stay secret on every output: a config that holds a distinct secret in every place a
 * config can hold one (literal and `${VAR}` env values, secret-flag arguments, URL userinfo (refused), a
 * query parameter, a token in a URL path, literal and `${VAR}` header values, a stored OAuth
 * token) runs through the real CLI — `validate`, `status`, `run --json` with its HTTP routes,
 * `call`, `tools`, and `serve` over stdio and HTTP — against server-everything (whose `get-env`
 * and `echo` echo them back), a stdio server that quotes its environment on stderr as it dies,
 * and an HTTP server that answers every request with an error quoting its URL and headers.
 * Every byte written (stdout, stderr, HTTP bodies, gateway results) is searched for each secret.
 */
import * as NodeCrypto from "node:crypto"
import * as NodeFs from "node:fs"
import * as NodeHttp from "node:http"
import * as NodeOs from "node:os"
import * as NodePath from "node:path"
import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js"
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js"
import { cliArgs, everything, freePort, root, runCli, Session, until, writeConfig } from "./helpers.ts"

/** One distinct secret per place a config can hold one. */
const planted = {
  envLiteral: "PlantEnvLit0a1b2c",
  envOther: "plant-env-other-3d4e",
  envVar: "PlantVar5f6g7h",
  flag: "PlantFlag8i9j",
  flagEquals: "PlantEq0k1l",
  userinfo: "PlantPass2m3n",
  query: "PlantQuery4o5p",
  pathToken: "PlantPathTok6q7r8s9t0u",
  header: "PlantHeader1v2w",
  headerVar: "PlantHdrVar3x4y",
  bearer: "PlantBearer5z6a",
  stderr: "PlantStderr7b8c",
  oauthAccess: "PlantOauthAccess9d0e",
  oauthRefresh: "PlantOauthRefresh1f2g",
  oauthSecretVar: "PlantOauthSecret3h4i",
  pgPassword: "plantpgpassword",
  pemLine: "MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwPlantPem",
  cutLine: "PlantCut5j6k7l8m9n0o",
  basicPassword: "PlantBasicPw1p2q",
  cookie: "PlantCookie3r4s",
  session: "PlantSession5t6u"
} as const

/** A key of several lines, as a PEM in `env` holds one: a server that prints it splits it over stderr lines. */
const pem = `-----BEGIN PRIVATE KEY-----\\n${planted.pemLine}\\n-----END PRIVATE KEY-----\\n`

/** Secrets whose beginning alone must not show either: a stderr line cut in the middle of one. */
const prefixes = { cutLine: planted.cutLine.slice(0, 10) }

/** The variables the CLI runs with: the `${VAR}`s of the config. */
const env = { PLANTED_VAR: planted.envVar, PLANTED_HDR: planted.headerVar, PLANTED_OAUTH: planted.oauthSecretVar }

/** Everything any command wrote, labelled by where it came from. */
const outputs: Array<{ readonly where: string; readonly text: string }> = []
const record = (where: string, text: string) => outputs.push({ where, text })

let echo: NodeHttp.Server
let config = ""
let stateDir = ""

/**
 * A remote MCP server that answers every request with an error quoting what it was sent: its URL
 * and the values of its credential headers (without the `Bearer` that pattern redaction knows).
 */
const startEcho = async () => {
  const server = NodeHttp.createServer((req, res) => {
    const authorization = req.headers.authorization ?? ""
    const credential = /^Basic\s/i.test(authorization)
      ? Buffer.from(authorization.slice(6), "base64").toString("utf8")
      : authorization.replace(/^Bearer\s+/i, "")
    const cookie = (req.headers.cookie ?? "").split("=")[1] ?? ""
    const seen = [req.url, credential, cookie, req.headers["x-api-key"], req.headers["x-from-var"]].join(" ")
    res.writeHead(500, { "content-type": "text/plain" }).end(`upstream refused ${seen}`)
  })
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  const address = server.address()
  if (address === null || typeof address === "string") throw new Error("no address")
  return { server, port: address.port }
}

/** A login stored where `toolvisor auth` keeps it, so the toolset sends its token unasked. */
const storeLogin = (dir: string, serverUrl: string) => {
  const file = NodeCrypto.createHash("sha256").update(`${serverUrl}\n`).digest("hex").slice(0, 32)
  NodeFs.mkdirSync(NodePath.join(dir, "oauth"), { recursive: true, mode: 0o700 })
  NodeFs.writeFileSync(
    NodePath.join(dir, "oauth", `${file}.json`),
    JSON.stringify({
      serverUrl,
      tokens: { access_token: planted.oauthAccess, token_type: "Bearer", refresh_token: planted.oauthRefresh }
    }),
    { mode: 0o600 }
  )
}

beforeAll(async () => {
  const started = await startEcho()
  echo = started.server
  const base = `http://127.0.0.1:${started.port}`
  stateDir = NodeFs.mkdtempSync(NodePath.join(NodeOs.tmpdir(), "toolvisor-planted-"))
  storeLogin(stateDir, `${base}/oauth/mcp`)
  const bestEffort = "        lifecycle: { profile: best-effort }"
  config = writeConfig(
    [
      "agents:",
      "  root:",
      "    toolsets:",
      "      - type: mcp",
      "        name: ev",
      `        command: "${process.execPath}"`,
      `        args: ["${everything}", "stdio", "--api-key", "${planted.flag}", "--token=${planted.flagEquals}"]`,
      `        env: { API_TOKEN: "${planted.envLiteral}", TENANT: "${planted.envOther}", FROM_VAR: "\${PLANTED_VAR}", PGPASSWORD: "${planted.pgPassword}" }`,
      "      - type: mcp",
      "        name: leaky",
      `        command: "${process.execPath}"`,
      `        args: ["-e", "console.error('x'.repeat(990) + process.env.LEAK_CUT); console.error('key ' + process.env.PRIVATE_KEY); console.error('cannot start with ' + process.env.LEAK_TOKEN); process.exit(3)"]`,
      `        env: { LEAK_TOKEN: "${planted.stderr}", LEAK_CUT: "${planted.cutLine}", PRIVATE_KEY: "${pem}" }`,
      bestEffort,
      "      - type: mcp",
      "        name: api",
      "        remote:",
      `          url: ${base}/v1/${planted.pathToken}/mcp?api_key=${planted.query}`,
      "          headers:",
      `            X-Api-Key: ${planted.header}`,
      // biome-ignore lint/suspicious/noTemplateCurlyInString: the config's own ${VAR} syntax
      '            X-From-Var: "${PLANTED_HDR}"',
      `            Authorization: "Bearer ${planted.bearer}"`,
      bestEffort,
      "      - type: mcp",
      "        name: basic",
      "        remote:",
      `          url: ${base}/basic/mcp?session=${planted.session}`,
      "          headers:",
      `            Authorization: "Basic ${Buffer.from(`svc-user:${planted.basicPassword}`).toString("base64")}"`,
      `            Cookie: "session=${planted.cookie}"`,
      bestEffort,
      "      - type: mcp",
      "        name: oauthed",
      "        remote:",
      `          url: ${base}/oauth/mcp`,
      bestEffort,
      "      - type: mcp",
      "        name: machine",
      "        remote:",
      `          url: ${base}/machine/mcp`,
      // biome-ignore lint/suspicious/noTemplateCurlyInString: the config's own ${VAR} syntax
      '          oauth: { clientId: machine, clientSecret: "${PLANTED_OAUTH}" }',
      bestEffort
    ].join("\n")
  )
})

afterAll(async () => {
  await new Promise((resolve) => echo.close(resolve))
})

const cli = async (args: ReadonlyArray<string>, input?: string) => {
  const finished = await runCli(args, {
    env: { ...env, TOOLVISOR_STATE_DIR: stateDir },
    ...(input === undefined ? {} : { input })
  })
  record(`${args.join(" ")} (stdout)`, finished.stdout)
  record(`${args.join(" ")} (stderr)`, finished.stderr)
  return finished
}

/** Waits until the toolset's error (or its Ready) shows on the status route. */
const untilSettled = (base: string) =>
  until(async () => {
    const rows: ReadonlyArray<{ readonly toolset: string; readonly state: string; readonly error: unknown }> =
      JSON.parse(await (await fetch(`${base}/status`)).text())
    const settled = (name: string) => rows.some((r) => r.toolset === name && (r.state === "Ready" || r.error !== null))
    return ["ev", "leaky", "api", "basic", "oauthed"].every(settled)
  }, 60_000)

/** The first frames of the event stream: the snapshot of every toolset. */
const firstEvents = async (url: string) => {
  const abort = new AbortController()
  const response = await fetch(url, { signal: abort.signal })
  let text = ""
  const reader = response.body?.getReader()
  const decoder = new TextDecoder()
  while (reader !== undefined && !text.includes("event: snapshot")) {
    const { value, done } = await reader.read()
    if (done) break
    text += decoder.decode(value, { stream: true })
  }
  abort.abort()
  return text
}

const textOf = (result: unknown) => JSON.stringify(result)

describe("secrets planted in every place a config holds one", () => {
  it("appear in no output of validate, status, run --json, the HTTP routes, call, tools or the gateway", async () => {
    // A URL's user name and password are refused (fetch cannot send them); the refusal names neither.
    const creds = writeConfig(
      ["agents:", "  root:", "    toolsets:", "      - type: mcp", "        remote:"]
        .concat([`          url: http://bob:${planted.userinfo}@127.0.0.1:1/mcp`])
        .join("\n")
    )
    assert.strictEqual((await cli(["validate", creds])).code, 2)
    await cli(["validate", config])
    await cli(["validate", config, "--check"])
    await cli(["status", config, "--json", "--timeout", "30s"])
    await cli(["status", config, "--timeout", "30s"])
    await cli(["tools", config, "--json", "--timeout", "30s"])
    const getEnv = await cli(["call", config, "ev_get-env", "{}", "--timeout", "30s"])
    // The call really echoed the environment: the masks stand where the secrets were.
    assert.include(getEnv.stdout, '"API_TOKEN": "***"')
    await cli(["call", config, "ev_get-env", "{}", "--json", "--timeout", "30s"])
    await cli(["call", config, "ev_echo", JSON.stringify({ message: `say ${planted.flag}` }), "--json"])
    await cli(["call", config, "api_anything", "{}", "--json", "--timeout", "30s"])

    // run --json with its status routes, commands on stdin.
    const port = await freePort()
    const run = new Session(["run", config, "--json", "--http", String(port)], {
      ...env,
      TOOLVISOR_STATE_DIR: stateDir
    })
    try {
      const base = `http://127.0.0.1:${port}`
      await until(async () => (await fetch(`${base}/healthz`).catch(() => undefined))?.ok === true, 60_000)
      await untilSettled(base)
      record("GET /status", await (await fetch(`${base}/status`)).text())
      // A toolset's page shows its server's stderr tail: line by line, each line cut short.
      record("GET /toolsets/leaky", await (await fetch(`${base}/toolsets/leaky`)).text())
      record("GET /events", await firstEvents(`${base}/events`))
      run.send({ cmd: "status", id: "s" })
      run.send({ cmd: "call", tool: "ev_get-env", id: "env" })
      run.send({ cmd: "call", tool: "ev_echo", args: { message: planted.envLiteral }, id: "echo" })
      run.send({ cmd: "restart", toolset: "api", id: "restart" })
      for (const id of ["s", "env", "echo", "restart"]) await run.waitFor((l) => l.id === id)
    } finally {
      run.child.kill("SIGTERM")
      await run.exited()
      record("run --json (stdout)", run.lines.join("\n"))
      record("run --json (stderr)", run.stderr)
    }

    // serve over stdio: results through the gateway.
    const stdio = new StdioClientTransport({
      command: process.execPath,
      args: cliArgs(["serve", config]),
      cwd: root,
      env: Object.fromEntries(
        Object.entries({ ...process.env, ...env, TOOLVISOR_STATE_DIR: stateDir }).flatMap(([key, value]) =>
          value === undefined ? [] : [[key, value]]
        )
      ),
      stderr: "pipe"
    })
    let serveStderr = ""
    stdio.stderr?.on("data", (chunk: Buffer) => (serveStderr += chunk.toString("utf8")))
    const client = new Client({ name: "planted", version: "1.0.0" })
    await client.connect(stdio)
    try {
      await until(async () => (await client.listTools()).tools.some((t) => t.name === "ev_get-env"), 60_000)
      const served = await client.callTool({ name: "ev_get-env", arguments: {} })
      assert.include(textOf(served), "FROM_VAR", "the gateway's result is the server's environment")
      record("serve: ev_get-env", textOf(served))
      record("serve: ev_echo", textOf(await client.callTool({ name: "ev_echo", arguments: { message: planted.flag } })))
      record("serve: api call", textOf(await client.callTool({ name: "api_anything", arguments: {} })))
      record("serve: tools/list", textOf(await client.listTools()))
    } finally {
      await client.close()
      record("serve (stderr)", serveStderr)
    }

    // serve --http: the gateway and the status routes on one port.
    const httpPort = await freePort()
    const served = new Session(["serve", config, "--http", String(httpPort)], { ...env, TOOLVISOR_STATE_DIR: stateDir })
    const remote = new Client({ name: "planted-http", version: "1.0.0" })
    try {
      const base = `http://127.0.0.1:${httpPort}`
      await until(async () => (await fetch(`${base}/healthz`).catch(() => undefined))?.ok === true, 60_000)
      await remote.connect(new StreamableHTTPClientTransport(new URL(`${base}/mcp`)))
      await until(async () => (await remote.listTools()).tools.some((t) => t.name === "ev_get-env"), 60_000)
      record("serve --http: ev_get-env", textOf(await remote.callTool({ name: "ev_get-env", arguments: {} })))
      await untilSettled(base)
      record("serve --http: GET /status", await (await fetch(`${base}/status`)).text())
    } finally {
      await remote.close()
      served.child.kill("SIGTERM")
      await served.exited()
      record("serve --http (stdout)", served.lines.join("\n"))
      record("serve --http (stderr)", served.stderr)
    }

    // The failures really quoted what they were sent, masked: the test would see a leak.
    const all = outputs.map((o) => o.text).join("\n")
    assert.include(all, "upstream refused", "the remote's error, which quotes its URL and headers, was shown")
    assert.include(all, "cannot start with ***", "the dying server's stderr was shown, masked")
    // Case-insensitive: a message that was lower-cased on its way out still leaks the secret.
    const leaks = Object.entries({ ...planted, ...prefixes }).flatMap(([place, secret]) =>
      outputs
        .filter((o) => o.text.toLowerCase().includes(secret.toLowerCase()))
        .map((o) => `${place} (${secret}) in ${o.where}`)
    )
    assert.deepStrictEqual(leaks, [])
    assert.include(all, '"key ***","***","***"', "the dying server's key was shown, masked line by line")
  }, 300_000)
})
