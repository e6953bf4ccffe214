// biome-ignore-all lint/suspicious/noTemplateCurlyInString: ${VAR} is the config syntax under test, not a template
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as ConfigError from "../src/ConfigError.ts"
import * as Interpolation from "../src/Interpolation.ts"
import { agentYaml, issuesOf, parse, toolset } from "./helpers.ts"

describe("Interpolation.expand", () => {
  it("replaces ${VAR} and reports the value as a secret", () => {
    assert.deepStrictEqual(Interpolation.expand("Bearer ${TOKEN}", { TOKEN: "abc123" }), {
      value: "Bearer abc123",
      secrets: ["abc123"],
      problems: []
    })
  })

  it("uses the default when the variable is unset or empty; a default is not a secret", () => {
    assert.deepStrictEqual(Interpolation.expand("${HOST:-localhost}:${PORT:-80}", { PORT: "" }), {
      value: "localhost:80",
      secrets: [],
      problems: []
    })
    assert.strictEqual(Interpolation.expand("${HOST:-localhost}", { HOST: "example.com" }).value, "example.com")
    assert.strictEqual(Interpolation.expand("${EMPTY:-}", {}).value, "")
  })

  it("$$ is a literal dollar; a lone $ stays as written", () => {
    assert.strictEqual(Interpolation.expand("cost: $$5 and $HOME and $${X}", {}).value, "cost: $5 and $HOME and ${X}")
  })

  it("a missing variable without default is a problem naming it", () => {
    const expansion = Interpolation.expand("--token=${API_TOKEN}", {})
    assert.deepStrictEqual(expansion.problems, [
      "Environment variable API_TOKEN is not set (write ${API_TOKEN:-default} for a default)"
    ])
  })

  it("malformed and unterminated references are problems", () => {
    assert.strictEqual(Interpolation.expand("${1BAD}", {}).problems.length, 1)
    assert.match(Interpolation.expand("${OPEN", {}).problems[0] ?? "", /Unterminated/)
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

  it.effect("every missing variable is reported with its path, together with the Schema's issues", () =>
    Effect.gen(function* () {
      const issues = yield* issuesOf(`${yaml}      - { type: mcp, command: x, lazzy: true }\n`, {
        HOST: "h.example.com"
      })
      assert.deepStrictEqual(
        issues.map((issue) => issue.path),
        [
          "agents.root.toolsets[2].lazzy",
          "agents.root.toolsets[0].command",
          "agents.root.toolsets[0].args[1]",
          "agents.root.toolsets[0].env.TOKEN",
          "agents.root.toolsets[1].remote.headers.Authorization"
        ]
      )
      assert.include(issues[1]?.message, "SERVER_BIN is not set")
      assert.include(issues[4]?.message, "WEB_TOKEN is not set")
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
    const problem = Interpolation.expand("${GITHUB_TOKEN}", {}).problems[0] ?? ""
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
