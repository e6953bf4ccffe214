/**
 * Secrets written into a config itself, which no `${VAR}` announces, are collected with the ones
 * from the environment, so every output masks them too.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as ConfigLoader from "../src/ConfigLoader.ts"
import { agentYaml, parse, toolset } from "./helpers.ts"

describe("secrets written into the file", () => {
  it.effect("args after secret flags, --flag=value, env and header values, URL path and query, a client secret", () =>
    Effect.gen(function* () {
      const config = yield* parse(
        agentYaml(`      - type: mcp
        name: local
        command: server
        args: ["--api-key", "lit-apikey-1", "--token=lit-token-2", "--port", "8080", "--root", "/srv/data"]
        env: { GITHUB_TOKEN: "lit-env-3", LOG_LEVEL: "debug" }
      - type: mcp
        name: remote
        remote:
          url: https://mcp.example.com/v1/LitPathToken5abcdefGHIJ/sse?api_key=lit-query-6&page=2
          headers: { X-Api-Key: lit-header-7, Accept: application/json }
          oauth: { clientId: app, clientSecret: lit-client-8 }
`)
      )
      const local = toolset(config, "mcp/local")
      assert.includeMembers([...local.secrets], ["lit-apikey-1", "lit-token-2", "lit-env-3"])
      for (const plain of ["8080", "/srv/data", "debug", "server"]) assert.notInclude(local.secrets, plain)
      const remote = toolset(config, "mcp/remote")
      assert.includeMembers(
        [...remote.secrets],
        ["LitPathToken5abcdefGHIJ", "lit-query-6", "lit-header-7", "lit-client-8"]
      )
      for (const plain of ["application/json", "2", "sse"]) assert.notInclude(remote.secrets, plain)
    })
  )

  it.effect(
    "values under names with a secret word inside are secrets however plain they look; look-alikes are not",
    () =>
      Effect.gen(function* () {
        const config = yield* parse(
          agentYaml(`      - type: mcp
        name: local
        command: server
        env:
          PGPASSWORD: hunter2pw
          APITOKEN: mytokenvalue
          PRIVATEKEY: mykeymaterial
          ACCESSTOKEN: lowercaseval
          MY_CREDS: opensesame
          SVC: "\${SERVICE_PW}"
          TOKENIZER_MODEL: cl100k-base
          MAX_TOKENS: "4096"
`),
          { SERVICE_PW: "swordfish" }
        )
        const local = toolset(config, "mcp/local")
        assert.includeMembers(
          [...local.secrets],
          ["hunter2pw", "mytokenvalue", "mykeymaterial", "lowercaseval", "opensesame", "swordfish"]
        )
        for (const plain of ["cl100k-base", "4096"]) assert.notInclude(local.secrets, plain)
      })
  )

  it.effect("a Basic header's decoded password, cookie values, session, access and appid query values", () =>
    Effect.gen(function* () {
      const basic = Buffer.from("svc-user:S3cretPassw0rd").toString("base64")
      const config = yield* parse(
        agentYaml(`      - type: mcp
        name: remote
        remote:
          url: "https://mcp.example.com/mcp?session=sessval12&appid=myappid77&access=Zz1Yy2Xx3&page=2"
          headers: { Authorization: "Basic ${basic}", Cookie: "session=cookieval99; theme=dark" }
`)
      )
      const remote = toolset(config, "mcp/remote")
      assert.includeMembers(
        [...remote.secrets],
        ["S3cretPassw0rd", "svc-user:S3cretPassw0rd", "cookieval99", "sessval12", "myappid77", "Zz1Yy2Xx3"]
      )
      for (const plain of ["2", "dark", "svc-user"]) assert.notInclude(remote.secrets, plain)
    })
  )

  it.effect("a headersHelper command's literal secrets, not the shell variables it names", () =>
    Effect.gen(function* () {
      const helped = yield* ConfigLoader.parse(
        JSON.stringify({
          mcpServers: {
            h: {
              type: "http",
              url: "https://mcp.example.com/mcp",
              headersHelper: "./h.sh --client-secret s3cr3tValue99 --token $GH_TOKEN"
            }
          }
        }),
        { source: "/project/.mcp.json", baseDir: "/project", env: {} }
      )
      const h = helped.toolsets[0]
      assert.include(h?.secrets, "s3cr3tValue99")
      assert.notInclude(h?.secrets, "$GH_TOKEN")
    })
  )
})
