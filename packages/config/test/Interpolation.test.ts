// biome-ignore-all lint/suspicious/noTemplateCurlyInString: ${VAR} is the config syntax under test, not a template
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import type * as AgentConfig from "../src/AgentConfig.ts"
import * as ConfigError from "../src/ConfigError.ts"
import * as ConfigLoader from "../src/ConfigLoader.ts"
import * as Interpolation from "../src/internal/interpolation.ts"
import { agentYaml, issuesOf, parse, toolset } from "./helpers.ts"

describe("Interpolation.expand", () => {
  it("replaces ${VAR} and reports the value as a secret", () => {
    assert.deepStrictEqual(Interpolation.expand("Bearer ${TOKEN}", { TOKEN: "abc123" }), {
      value: "Bearer abc123",
      secrets: ["abc123"],
      problems: [],
      missing: []
    })
  })

  it("uses the default when the variable is unset or empty; a default is not a secret", () => {
    assert.deepStrictEqual(Interpolation.expand("${HOST:-localhost}:${PORT:-80}", { PORT: "" }), {
      value: "localhost:80",
      secrets: [],
      problems: [],
      missing: []
    })
    assert.strictEqual(Interpolation.expand("${HOST:-localhost}", { HOST: "example.com" }).value, "example.com")
    assert.strictEqual(Interpolation.expand("${EMPTY:-}", {}).value, "")
  })

  it("$$ is a literal dollar; a lone $ stays as written", () => {
    assert.strictEqual(Interpolation.expand("cost: $$5 and $HOME and $${X}", {}).value, "cost: $5 and $HOME and ${X}")
  })

  it("a missing variable without default is missing from the environment, not a problem of the text; it stays as written", () => {
    const expansion = Interpolation.expand("--token=${API_TOKEN} --mode=$MODE", {}, { bare: true })
    assert.deepStrictEqual(expansion, {
      value: "--token=${API_TOKEN} --mode=$MODE",
      secrets: [],
      problems: [],
      missing: [
        {
          variable: "API_TOKEN",
          message: "Environment variable API_TOKEN is not set (write ${API_TOKEN:-default} for a default)"
        },
        { variable: "MODE", message: "Environment variable MODE is not set" }
      ]
    })
  })

  it("malformed and unterminated references are problems of the text", () => {
    assert.strictEqual(Interpolation.expand("${1BAD}", {}).problems.length, 1)
    assert.match(Interpolation.expand("${OPEN", {}).problems[0] ?? "", /Unterminated/)
    assert.deepStrictEqual(Interpolation.expand("${OPEN", {}).missing, [])
  })

  it("a problem never quotes a secret's value, nor what a value holds before the reference", () => {
    const { issues } = Interpolation.expandEntry(
      {
        env: { DB_PASSWORD: "hunter2${abc", MODE: "Zx9!hunter3${", API_KEY: "a${b c}d" },
        headers: { Authorization: "Bearer q7Zp${x" },
        args: ["--token=q7Zp${x", "${1BAD}"]
      },
      "t",
      {}
    )
    const text = issues.map((issue) => `${issue.path}: ${issue.message}`).join("\n")
    for (const secret of ["hunter2", "hunter3", "q7Zp", "b c"]) assert.notInclude(text, secret)
    assert.include(text, "t.env.DB_PASSWORD: Unterminated `${` at character 8 of the value (not shown")
    assert.include(text, 't.env.MODE: Unterminated `${` in "${"')
    assert.include(text, "t.env.API_KEY: The reference at character 2 of the value (not shown")
    assert.include(text, "t.headers.Authorization: Unterminated `${` at character 12")
    assert.include(text, 't.args[0]: Unterminated `${` in "${x"')
    assert.include(text, "t.args[1]: `${1BAD}` is not a variable reference")
  })
})

describe("Interpolation in a config", () => {
  const yaml = agentYaml(`      - type: mcp
        name: api
        command: \${SERVER_BIN}
        args: ["--key", "\${API_KEY}", "--mode=\${MODE:-fast}"]
        env: { TOKEN: "\${API_KEY}", PLAIN: "$$literal" }
      - type: mcp
        name: web
        remote:
          url: https://\${HOST}/mcp
          headers: { Authorization: "Bearer \${WEB_TOKEN}" }
`)

  it.effect("expands command, args, env, url and headers; environment values (not paths, host names) are secrets", () =>
    Effect.gen(function* () {
      const env = {
        SERVER_BIN: "/opt/api-server",
        API_KEY: "k-0123456789",
        HOST: "mcp.example.com",
        WEB_TOKEN: "w-secret-42"
      }
      const config = yield* parse(yaml, env)
      const api = toolset(config, "mcp/api")
      assert.deepStrictEqual(api.transport, {
        _tag: "stdio",
        command: "/opt/api-server",
        args: ["--key", "k-0123456789", "--mode=fast"],
        env: { TOKEN: "k-0123456789", PLAIN: "$literal" },
        cwd: "/project"
      })
      // A path from the environment is a setting: masking it would garble every path in a result.
      assert.sameMembers([...api.secrets], ["k-0123456789", "$literal"])
      const web = toolset(config, "mcp/web")
      assert.deepStrictEqual(web.transport, {
        _tag: "http",
        url: "https://mcp.example.com/mcp",
        headers: { Authorization: "Bearer w-secret-42" }
      })
      // A host name is a setting too; the token is the secret.
      assert.sameMembers([...web.secrets], ["w-secret-42", "Bearer w-secret-42"])
    })
  )

  it.effect("a file's problems fail the load; an unset variable is not one of them", () =>
    Effect.gen(function* () {
      const issues = yield* issuesOf(`${yaml}      - { type: mcp, command: x, lazzy: true, args: ["\${1BAD}"] }\n`, {
        HOST: "h.example.com"
      })
      assert.deepStrictEqual(
        issues.map((issue) => issue.path),
        ["agents.root.toolsets[2].lazzy", "agents.root.toolsets[2].args[0]"]
      )
    })
  )

  it.effect(
    "every unset variable is named, with its path and toolset; only the toolsets that need one are unresolved",
    () =>
      Effect.gen(function* () {
        const config = yield* parse(`${yaml}      - { type: mcp, name: plain, command: x }\n`, {
          HOST: "h.example.com"
        })
        assert.deepStrictEqual(
          config.warnings?.map((warning) => [warning.path, warning.message.replace(/ \(write .*\)$/, "")]),
          [
            [
              "agents.root.toolsets[0].command",
              "toolset api will not start: Environment variable SERVER_BIN is not set"
            ],
            ["agents.root.toolsets[0].args[1]", "toolset api will not start: Environment variable API_KEY is not set"],
            [
              "agents.root.toolsets[0].env.TOKEN",
              "toolset api will not start: Environment variable API_KEY is not set"
            ],
            [
              "agents.root.toolsets[1].remote.headers.Authorization",
              "toolset web will not start: Environment variable WEB_TOKEN is not set"
            ]
          ]
        )
        assert.deepStrictEqual(
          toolset(config, "mcp/api").unresolved?.map((lack) => lack.variable),
          ["SERVER_BIN", "API_KEY", "API_KEY"]
        )
        assert.isUndefined(toolset(config, "mcp/plain").unresolved)
        // The references stay as written: nothing runs with an empty token in their place.
        const api = toolset(config, "mcp/api").transport
        assert.deepStrictEqual(api._tag === "stdio" && [api.command, ...api.args], [
          "${SERVER_BIN}",
          "--key",
          "${API_KEY}",
          "--mode=fast"
        ])
      })
  )

  it.effect("two unnamed remote toolsets with different URLs are two toolsets, named deterministically", () =>
    Effect.gen(function* () {
      const text = `
agents:
  a: { toolsets: [{ type: mcp, remote: { url: "https://x.example.com/mcp?key=\${KEY}" } }] }
  b:
    toolsets:
      - type: mcp
        remote: { url: "https://x.example.com/mcp?key=\${KEY}", headers: { Authorization: "Bearer \${TOKEN}" } }
`
      const env = { KEY: "sup3r-s3cret", TOKEN: "tok_abcdef123" }
      const first = yield* parse(text, env)
      const second = yield* parse(text, env)
      assert.deepStrictEqual(
        first.toolsets.map((t) => t.name),
        ["x.example.com", "x.example.com-2"]
      )
      assert.deepStrictEqual(
        first.toolsets.map((t) => t.identity),
        second.toolsets.map((t) => t.identity)
      )
      assert.notStrictEqual(first.toolsets[0]?.identity, first.toolsets[1]?.identity)
    })
  )

  it("ConfigError masks environment values and credential shapes, never a variable reference in a hint", () => {
    const problem = Interpolation.expand("${GITHUB_TOKEN}", {}).missing[0]?.message ?? ""
    const error = ConfigError.make(
      "<inline>",
      [
        { path: "a", message: problem },
        { path: "b", message: "got https://x.example.com/?key=sup3r-s3cret and token=abc123def" }
      ],
      ["sup3r-s3cret"]
    )
    assert.include(error.message, "write ${GITHUB_TOKEN:-default} for a default")
    assert.notInclude(error.message, "sup3r-s3cret")
    assert.notInclude(error.message, "abc123def")
  })
})

/**
 * Every field documented as interpolated, in each format that has it: expanded when the variable
 * is set (the value a secret), and naming the variable at its path, the reference kept as written,
 * when it is not. The table must cover `Interpolation.expandedFields`, so a field added there
 * without a row here fails.
 */
describe("every interpolated field", () => {
  const value = "Xv4lue42"
  const env = { SECRET_V: value }
  interface Row {
    /** The entry of `Interpolation.expandedFields` it covers. */
    readonly field: string
    /** A docker-agent toolset entry (YAML flow mapping) or an mcpServers/context_servers server (JSON). */
    readonly entry: string
    readonly format: "docker-agent" | "mcpServers" | "zed"
    /** Where a missing variable is reported, under the entry. */
    readonly at: string
    /** The field as the resolved transport holds it. */
    readonly read: (transport: AgentConfig.Transport) => unknown
    readonly expanded: unknown
  }
  const stdio = (f: (t: Extract<AgentConfig.Transport, { _tag: "stdio" }>) => unknown) => (t: AgentConfig.Transport) =>
    t._tag === "stdio" ? f(t) : undefined
  const remote = (f: (t: Exclude<AgentConfig.Transport, { _tag: "stdio" }>) => unknown) => (t: AgentConfig.Transport) =>
    t._tag === "stdio" ? undefined : f(t)
  const url = "https://a.example/mcp"
  const rows: ReadonlyArray<Row> = [
    {
      field: "command",
      format: "docker-agent",
      entry: '{ type: mcp, command: "/opt/${SECRET_V}/server" }',
      at: "command",
      read: stdio((t) => t.command),
      expanded: `/opt/${value}/server`
    },
    {
      field: "command",
      format: "mcpServers",
      entry: '{ "command": "/opt/${SECRET_V}/server" }',
      at: "command",
      read: stdio((t) => t.command),
      expanded: `/opt/${value}/server`
    },
    {
      field: "command",
      format: "zed",
      entry: '{ "command": { "path": "/opt/${SECRET_V}", "args": ["${SECRET_V}"], "env": { "K": "${SECRET_V}" } } }',
      at: "command.path",
      read: stdio((t) => [t.command, t.args, t.env]),
      expanded: [`/opt/${value}`, [value], { K: value }]
    },
    {
      field: "args",
      format: "docker-agent",
      entry: '{ type: mcp, command: x, args: ["--key=${SECRET_V}"] }',
      at: "args[0]",
      read: stdio((t) => t.args),
      expanded: [`--key=${value}`]
    },
    {
      field: "args",
      format: "mcpServers",
      entry: '{ "command": "x", "args": ["--key=${SECRET_V}"] }',
      at: "args[0]",
      read: stdio((t) => t.args),
      expanded: [`--key=${value}`]
    },
    {
      field: "env",
      format: "docker-agent",
      entry: '{ type: mcp, command: x, env: { K: "$SECRET_V" } }',
      at: "env.K",
      read: stdio((t) => t.env),
      expanded: { K: value }
    },
    {
      field: "env",
      format: "mcpServers",
      entry: '{ "command": "x", "env": { "K": "${env:SECRET_V}" } }',
      at: "env.K",
      read: stdio((t) => t.env),
      expanded: { K: value }
    },
    {
      field: "working_dir",
      format: "docker-agent",
      entry: '{ type: mcp, command: x, working_dir: "/srv/${SECRET_V}" }',
      at: "working_dir",
      read: stdio((t) => t.cwd),
      expanded: `/srv/${value}`
    },
    {
      field: "cwd",
      format: "mcpServers",
      entry: '{ "command": "x", "cwd": "/srv/${SECRET_V}" }',
      at: "cwd",
      read: stdio((t) => t.cwd),
      expanded: `/srv/${value}`
    },
    {
      field: "env_file",
      format: "docker-agent",
      entry: '{ type: mcp, command: x, env_file: "/etc/${SECRET_V}.env" }',
      at: "env_file",
      read: stdio((t) => t.envFile),
      expanded: `/etc/${value}.env`
    },
    {
      field: "envFile",
      format: "mcpServers",
      entry: '{ "command": "x", "envFile": "/etc/${SECRET_V}.env" }',
      at: "envFile",
      read: stdio((t) => t.envFile),
      expanded: `/etc/${value}.env`
    },
    {
      field: "url",
      format: "docker-agent",
      entry: '{ type: mcp, remote: { url: "https://${SECRET_V}.example/mcp" } }',
      at: "remote.url",
      read: remote((t) => t.url),
      expanded: `https://${value}.example/mcp`
    },
    {
      field: "url",
      format: "mcpServers",
      entry: '{ "url": "https://${SECRET_V}.example/mcp" }',
      at: "url",
      read: remote((t) => t.url),
      expanded: `https://${value}.example/mcp`
    },
    {
      field: "serverUrl",
      format: "mcpServers",
      entry: '{ "serverUrl": "https://${SECRET_V}.example/mcp" }',
      at: "serverUrl",
      read: remote((t) => t.url),
      expanded: `https://${value}.example/mcp`
    },
    {
      field: "httpUrl",
      format: "mcpServers",
      entry: '{ "httpUrl": "https://${SECRET_V}.example/mcp" }',
      at: "httpUrl",
      read: remote((t) => t.url),
      expanded: `https://${value}.example/mcp`
    },
    {
      field: "headers",
      format: "docker-agent",
      entry: `{ type: mcp, remote: { url: "${url}", headers: { X-Key: "\${SECRET_V}" } } }`,
      at: "remote.headers.X-Key",
      read: remote((t) => t.headers),
      expanded: { "X-Key": value }
    },
    {
      field: "headers",
      format: "mcpServers",
      entry: `{ "url": "${url}", "headers": { "X-Key": "\${SECRET_V}" } }`,
      at: "headers.X-Key",
      read: remote((t) => t.headers),
      expanded: { "X-Key": value }
    },
    {
      field: "oauth",
      format: "docker-agent",
      entry: `{ type: mcp, remote: { url: "${url}", oauth: { clientId: "id-\${SECRET_V}", clientSecret: "\${SECRET_V}", scopes: ["read:\${SECRET_V}"], callbackRedirectURL: "http://127.0.0.1:\${callbackPort}/\${SECRET_V}" } } }`,
      at: "remote.oauth.clientSecret",
      read: remote((t) => t.oauth),
      expanded: {
        clientId: `id-${value}`,
        clientSecret: value,
        scopes: [`read:${value}`],
        callbackRedirectURL: `http://127.0.0.1:\${callbackPort}/${value}`
      }
    },
    {
      field: "oauth",
      format: "mcpServers",
      entry: `{ "url": "${url}", "oauth": { "clientId": "id", "clientSecret": "\${SECRET_V}", "scopes": "a \${SECRET_V}" } }`,
      at: "oauth.clientSecret",
      read: remote((t) => t.oauth),
      expanded: { clientId: "id", clientSecret: value, scopes: ["a", value] }
    }
  ]

  const load = (row: Row, variables: Record<string, string>) => {
    if (row.format === "docker-agent") return parse(agentYaml(`      - ${row.entry}\n`), variables)
    const key = row.format === "zed" ? "context_servers" : "mcpServers"
    const text = `{ "${key}": { "t": ${row.entry} } }`
    return ConfigLoader.parse(text, { source: "/project/settings.json", baseDir: "/project", env: variables })
  }
  const entryPath = (row: Row) =>
    row.format === "docker-agent"
      ? "agents.root.toolsets[0]"
      : row.format === "zed"
        ? "context_servers.t"
        : "mcpServers.t"

  it("covers every field Interpolation expands", () => {
    assert.sameMembers([...new Set(rows.map((row) => row.field))], [...Interpolation.expandedFields])
  })

  for (const row of rows) {
    it.effect(`${row.format} ${row.field}: expanded, a secret; unset, named at ${row.at} and kept as written`, () =>
      Effect.gen(function* () {
        const set = yield* load(row, env)
        const [toolset] = set.toolsets
        assert.deepStrictEqual(toolset && row.read(toolset.transport), row.expanded)
        assert.include(toolset?.secrets, value)
        assert.isUndefined(toolset?.unresolved)
        assert.deepStrictEqual(set.warnings, [])

        const unset = yield* load(row, {})
        const [held] = unset.toolsets
        assert.deepStrictEqual(
          held?.unresolved?.find((lack) => lack.path === `${entryPath(row)}.${row.at}`)?.variable,
          "SECRET_V"
        )
        assert.include(
          JSON.stringify(held && row.read(held.transport)),
          row.format === "docker-agent" && row.field === "env" ? "$SECRET_V" : "${"
        )
        assert.notInclude(held?.secrets ?? [], "")
      })
    )
  }

  it.effect("headersHelper is run by a shell, which expands its variables: it is kept as written", () =>
    Effect.gen(function* () {
      const text = `{ "mcpServers": { "t": { "url": "${url}", "headersHelper": "echo \\"{\\\\\\"K\\\\\\": \\\\\\"$\{SECRET_V}\\\\\\"}\\"" } } }`
      const config = yield* ConfigLoader.parse(text, { source: "/p/.mcp.json", baseDir: "/p", env })
      const [toolset] = config.toolsets
      const helper = toolset?.transport._tag === "stdio" ? undefined : toolset?.transport.headersHelper
      assert.include(helper?.command, "${SECRET_V}")
      assert.notInclude(helper?.command, value)
      assert.isUndefined(toolset?.unresolved)
    })
  )
})
