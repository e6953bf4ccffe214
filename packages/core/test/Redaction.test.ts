import { assert, describe, it } from "@effect/vitest"
import * as LifecycleError from "../src/LifecycleError.ts"
import * as Redaction from "../src/Redaction.ts"

describe("Redaction", () => {
  describe("redact", () => {
    it("masks bearer tokens", () => {
      const out = Redaction.redact("request failed: Bearer eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.c2ln")
      assert.strictEqual(out, "request failed: Bearer ***")
    })

    it("masks token= and api_key= values, in query strings and JSON", () => {
      const query = Redaction.redact("GET https://api.example.com/v1?token=s3cr3t&api_key=k3y&page=2")
      assert.strictEqual(query, "GET https://api.example.com/v1?token=***&api_key=***&page=2")
      const json = Redaction.redact('{"access_token":"s3cr3t","expires_in":3600}')
      assert.strictEqual(json, '{"access_token":"***","expires_in":3600}')
      assert.notInclude(Redaction.redact("API_KEY=k3y node server.js"), "k3y")
    })

    it("masks Authorization headers", () => {
      const out = Redaction.redact("sent Authorization: Basic dXNlcjpwYXNzd29yZA== to the server")
      assert.notInclude(out, "dXNlcjpwYXNzd29yZA")
      assert.include(out, "to the server")
      assert.notInclude(Redaction.redact('{"Authorization":"Bearer s3cr3t"}'), "s3cr3t")
      assert.notInclude(Redaction.redact("proxy-authorization=s3cr3t"), "s3cr3t")
    })

    it("masks the password of a URL and keeps the user and host", () => {
      const out = Redaction.redact("connect to https://alice:hunter2@mcp.example.com/sse failed")
      assert.strictEqual(out, "connect to https://alice:***@mcp.example.com/sse failed")
    })

    it("keeps a WWW-Authenticate challenge readable: its parameters are not credentials", () => {
      const challenge = 'Bearer realm="mcp", error="invalid_token", resource_metadata="https://x.example/.well-known"'
      assert.strictEqual(Redaction.redact(challenge), challenge)
    })

    it("leaves ordinary text alone", () => {
      const texts = [
        "connect ECONNREFUSED 127.0.0.1:8080",
        "spawn gopls ENOENT",
        "failed to send initialized notification: broken pipe",
        "HTTP 404: session not found",
        "https://mcp.example.com:8443/sse returned 502",
        "the tokenizer ran out of memory",
        "the basic configuration failed, bearer of bad news",
        ""
      ]
      for (const text of texts) assert.strictEqual(Redaction.redact(text), text)
    })

    it("is idempotent", () => {
      const once = Redaction.redact("Authorization: Bearer abc token=def https://u:p@h/")
      assert.strictEqual(Redaction.redact(once), once)
    })
  })
  describe("a redactor", () => {
    it("masks every occurrence, longest first, and leaves short values alone", () => {
      const redactor = Redaction.make(["abcd", "abcdef123", "x1"])
      assert.strictEqual(redactor.text("key abcdef123 and abcd, toolsets[x1]"), "key *** and ***, toolsets[x1]")
    })

    it("masks a value as a URL or a JSON string quotes it", () => {
      const redactor = Redaction.make(['p@ss/w"rd'])
      assert.strictEqual(redactor.values("https://h/?p=p%40ss%2Fw%22rd"), "https://h/?p=***")
      assert.strictEqual(redactor.values(JSON.stringify({ p: 'p@ss/w"rd' })), '{"p":"***"}')
    })

    it("grows at run time: a value added later is masked from then on", () => {
      const redactor = Redaction.make()
      assert.isTrue(redactor.isEmpty())
      assert.strictEqual(redactor.values("access tok-LATER-1234"), "access tok-LATER-1234")
      redactor.add(["tok-LATER-1234"])
      assert.isFalse(redactor.isEmpty())
      assert.strictEqual(redactor.values("access tok-LATER-1234"), "access ***")
    })

    it("values masks known values only; text masks credential shapes too", () => {
      const redactor = Redaction.make(["s3cr3t-value"])
      const text = "password=hunter22 and s3cr3t-value"
      assert.strictEqual(redactor.values(text), "password=hunter22 and ***")
      assert.strictEqual(redactor.text(text), "password=*** and ***")
    })

    it("masks each line of a multi-line secret, as a stderr tail split into lines shows it", () => {
      const pem = [
        "-----BEGIN PRIVATE KEY-----",
        "MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7",
        "  q8Zr5Tb3Wm9Kp2Lx7Nv4Jh6Gf1Ds0Ae",
        "-----END PRIVATE KEY-----",
        ""
      ].join("\n")
      const redactor = Redaction.make([pem, "firstLineOf2\r\nsecondLineOf2"])
      const tail = [
        "loaded credential -----BEGIN PRIVATE KEY-----",
        "MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7",
        "q8Zr5Tb3Wm9Kp2Lx7Nv4Jh6Gf1Ds0Ae",
        "-----END PRIVATE KEY-----",
        "fatal: could not use firstLineOf2",
        "secondLineOf2 was refused"
      ]
      assert.deepStrictEqual(
        tail.map((line) => redactor.text(line)),
        ["loaded credential ***", "***", "***", "***", "fatal: could not use ***", "*** was refused"]
      )
      assert.strictEqual(redactor.values(`key: ${pem}`), "key: ***", "the whole value is masked whole")
      assert.strictEqual(redactor.values(JSON.stringify({ pem })), '{"pem":"***"}')
    })

    it("does not mask a line of a multi-line secret that is too short or only punctuation", () => {
      const redactor = Redaction.make(["ab\n-----\n},\nAbCd3fGh1jKl"])
      assert.strictEqual(redactor.text("ab | ----- | }, | AbCd3fGh1jKl"), "ab | ----- | }, | ***")
    })

    it("masks a value too long for one regular expression in pieces, and does not throw", () => {
      const long = `K${"\u0000a7".repeat(30_000)}`
      const redactor = Redaction.make([long])
      assert.strictEqual(redactor.text(`key ${long} end`), `key ${"***".repeat(Math.ceil(long.length / 4096))} end`)
      assert.notInclude(redactor.values(JSON.stringify({ long })), "a7")
    })

    it("truncated masks a known value whose end a cut took off, however little of it is left", () => {
      const redactor = Redaction.make(["Zx9kQ2mP7vL4nR8tY1wE"])
      assert.strictEqual(redactor.truncated(`${"x".repeat(20)}Zx9kQ2mP7vL4nR8tY1w`), `${"x".repeat(20)}***`)
      assert.strictEqual(redactor.truncated("key Zx9"), "key ***")
      assert.strictEqual(redactor.truncated("Zx9kQ2mP7vL4nR8tY1wE and Zx9kQ"), "*** and ***")
      assert.strictEqual(redactor.truncated("an ordinary line"), "an ordinary line")
      assert.strictEqual(
        redactor.text("key Zx9kQ2mP7vL4nR8tY1w"),
        "key Zx9kQ2mP7vL4nR8tY1w",
        "text: not cut, not masked"
      )
      assert.strictEqual(Redaction.none.truncated("token=abc"), "token=***")
    })
  })

  describe("json", () => {
    const mask = Redaction.make(["s3cr3t-value"]).values

    it("masks every string, deep, and returns the same object when nothing changed", () => {
      const clean = { content: [{ type: "text", text: "hello" }], n: 1 }
      assert.strictEqual(Redaction.json(clean, mask), clean)
      const dirty = { content: [{ type: "text", text: "the key is s3cr3t-value" }], meta: { deep: ["s3cr3t-value"] } }
      assert.deepStrictEqual(Redaction.json(dirty, mask), {
        content: [{ type: "text", text: "the key is ***" }],
        meta: { deep: ["***"] }
      })
      assert.include(dirty.content[0]?.text, "s3cr3t-value", "the original is left as it was")
    })

    it("leaves binary payloads whole and masks what is nested too deep to read", () => {
      const image = { type: "image", mimeType: "image/png", data: "s3cr3t-value" }
      assert.strictEqual(Redaction.json(image, mask), image)
      let deep: unknown = "s3cr3t-value"
      for (let i = 0; i < 200; i++) deep = [deep]
      assert.notInclude(JSON.stringify(Redaction.json(deep, mask)), "s3cr3t-value")
    })
  })

  describe("error", () => {
    const mask = Redaction.make(["s3cr3t-value"]).text

    it("copies an error of the same class with its message, stderr and causes masked", () => {
      const cause = new Error("GET https://h/?token=s3cr3t-value failed")
      const error = new LifecycleError.ServerCrashed({
        toolset: "t",
        message: "t: crashed with s3cr3t-value",
        stderr: ["key s3cr3t-value"],
        exitCode: 1,
        cause
      })
      const masked = Redaction.error(error, mask)
      assert.instanceOf(masked, LifecycleError.ServerCrashed)
      assert.strictEqual(masked._tag, "ServerCrashed")
      assert.strictEqual(masked.exitCode, 1)
      assert.strictEqual(masked.message, "t: crashed with ***")
      assert.deepStrictEqual(masked.stderr, ["key ***"])
      assert.notInclude(String(masked.stack), "s3cr3t-value")
      assert.instanceOf(masked.cause, Error)
      assert.notInclude(String(masked.cause), "s3cr3t-value")
      assert.include(error.message, "s3cr3t-value", "the original is left as it was")
    })

    it("returns the same error when nothing needed masking", () => {
      const error = new LifecycleError.NotStarted({ toolset: "t", message: "t: stopped" })
      assert.strictEqual(Redaction.error(error, mask), error)
    })
  })

  describe("where a config holds secrets", () => {
    it("isSecretName reads the words of a name", () => {
      for (const name of [
        "GITHUB_TOKEN",
        "X-Api-Key",
        "apiKey",
        "client-secret",
        "Authorization",
        "DB_PASSWORD",
        "key"
      ]) {
        assert.isTrue(Redaction.isSecretName(name), name)
      }
      for (const name of ["KEYBOARD_LAYOUT", "MONKEY", "LOG_LEVEL", "Accept", "tokenizer"]) {
        assert.isFalse(Redaction.isSecretName(name), name)
      }
    })

    it("isSecretName finds a secret word inside a name written without separators, and not in look-alikes", () => {
      for (const name of [
        "PGPASSWORD",
        "APITOKEN",
        "PRIVATEKEY",
        "ACCESSTOKEN",
        "MY_CREDS",
        "GCPCREDENTIALS",
        "dbPassphrase",
        "SERVICE_PW",
        "AWSSECRETACCESSKEY",
        "myAppKey",
        "HFTOKEN",
        "x-auth-token",
        "Private-Token"
      ]) {
        assert.isTrue(Redaction.isSecretName(name), name)
      }
      for (const name of [
        "TOKENIZER_MODEL",
        "TOKENIZERS_PARALLELISM",
        "MAX_TOKENS",
        "MAX_OUTPUT_TOKENS",
        "TOKEN_LIMIT",
        "TOKENS_PER_MINUTE",
        "SECRETARY_EMAIL",
        "PASSENGER_COUNT",
        "COMPASS_HEADING",
        "KEYCLOAK_REALM",
        "CREDIT_LIMIT",
        "AUTHOR",
        "OAUTH_CLIENT_ID"
      ]) {
        assert.isFalse(Redaction.isSecretName(name), name)
      }
    })

    it("credentialSecrets takes a Basic header's decoded user:password and password, and a Cookie's values", () => {
      const basic = Buffer.from("svc-user:S3cretPassw0rd").toString("base64")
      assert.includeMembers(
        [...Redaction.credentialSecrets("Authorization", `Basic ${basic}`)],
        [`Basic ${basic}`, basic, "svc-user:S3cretPassw0rd", "S3cretPassw0rd"]
      )
      assert.notInclude(Redaction.credentialSecrets("Authorization", `Basic ${basic}`), "svc-user")
      assert.includeMembers([...Redaction.credentialSecrets("Proxy-Authorization", "basic dXNlcjpwYXNz")], ["pass"])
      assert.includeMembers([...Redaction.credentialSecrets("Authorization", "Bearer tok-1234")], ["tok-1234"])
      const cookie = Redaction.credentialSecrets("Cookie", "session=cookieval99; theme=dark; consent=true; n=12345")
      assert.includeMembers([...cookie], ["session=cookieval99; theme=dark; consent=true; n=12345", "cookieval99"])
      for (const plain of ["true", "12345", "session", "dark"]) assert.notInclude(cookie, plain)
      assert.includeMembers(
        [...Redaction.credentialSecrets("Cookie", "PHPSESSID=abcdef; pref=Xy7Qw2Lk9")],
        ["abcdef", "Xy7Qw2Lk9"]
      )
      // What only looks like base64 is not decoded into garbage.
      assert.sameMembers(
        [...Redaction.credentialSecrets("Authorization", "Basic not-base64!")],
        ["Basic not-base64!", "not-base64!"]
      )
    })

    it("headerSecrets decodes literal Basic credentials and takes Cookie values", () => {
      const headers = Redaction.headerSecrets({
        Authorization: `Basic ${Buffer.from("svc:Passw0rdXyz").toString("base64")}`,
        Cookie: "session=cookieval99"
      })
      assert.includeMembers([...headers], ["Passw0rdXyz", "svc:Passw0rdXyz", "cookieval99"])
    })

    it("urlSecrets takes session, access and appid query values, and secret words inside parameter names", () => {
      const found = Redaction.urlSecrets(
        "http://127.0.0.1:47010/mcp?apiKey=lowerval&session=sessval12&appid=myappid77&access=Zz1Yy2Xx3&accessToken=at-1234&page=20&lang=en"
      )
      for (const secret of ["lowerval", "sessval12", "myappid77", "Zz1Yy2Xx3", "at-1234"]) assert.include(found, secret)
      for (const plain of ["20", "en"]) assert.notInclude(found, plain)
      const masked = Redaction.redact("GET /mcp?session=sessval12&appid=myappid77&access=Zz1Yy2Xx3&page=20 failed")
      assert.strictEqual(masked, "GET /mcp?session=***&appid=***&access=***&page=20 failed")
    })

    it("commandSecrets reads a shell command as the words of a command line", () => {
      const found = Redaction.commandSecrets(
        `./h.sh --client-secret s3cr3tValue99 --token 'ghp_Abcdefghijklmnop1234'; API_KEY="k3y-value" ./other --password=$PW --port 8080 | jq .`
      )
      assert.includeMembers([...found], ["s3cr3tValue99", "ghp_Abcdefghijklmnop1234", "k3y-value"])
      for (const plain of ["$PW", "8080", "./h.sh", "jq", ".", "|"]) assert.notInclude(found, plain)
    })

    it("argSecrets finds values after secret flags, in NAME=value, header arguments, URLs and token shapes", () => {
      const found = Redaction.argSecrets([
        "server.js",
        "--api-key",
        "flag-key-1",
        "--token=flag-token-2",
        "-e",
        "GITHUB_TOKEN=env-token-3",
        "--header",
        "Authorization: Bearer header-token-4",
        "https://u:url-pass-5@h.example/x?api_key=query-key-6",
        "sk-positional7token",
        "--port",
        "8080",
        "--model=gpt-4o",
        "--root",
        "/home/me"
      ])
      for (const secret of [
        "flag-key-1",
        "flag-token-2",
        "env-token-3",
        "header-token-4",
        "url-pass-5",
        "query-key-6",
        "sk-positional7token"
      ]) {
        assert.include(found, secret)
      }
      for (const plain of ["server.js", "8080", "gpt-4o", "/home/me", "-e", "--header"]) assert.notInclude(found, plain)
    })

    it("urlSecrets finds userinfo, secret query parameters and token-shaped path segments", () => {
      const found = Redaction.urlSecrets(
        "https://alice:pw-1234@mcp.example.com/v1/AbCdEf0123456789XyZ0/sse?key=k-5678&page=2&sig=s-9012"
      )
      for (const secret of ["pw-1234", "AbCdEf0123456789XyZ0", "k-5678", "s-9012"]) assert.include(found, secret)
      for (const plain of ["alice", "v1", "sse", "2", "mcp.example.com"]) assert.notInclude(found, plain)
      assert.deepStrictEqual(Redaction.urlSecrets("not a url"), [])
    })

    it("envSecrets and headerSecrets take secret-named values whole and others unless they are plain settings", () => {
      const env = Redaction.envSecrets({
        API_TOKEN: "debug",
        LOG_LEVEL: "debug",
        DATA_DIR: "/var/data",
        PORT: "3000",
        REGION: "us-east-1",
        TENANT: "Acme-Corp-7x",
        GREETING: "hello there"
      })
      assert.sameMembers([...env], ["debug", "Acme-Corp-7x"])
      const headers = Redaction.headerSecrets({ Authorization: "Bearer hdr-token-1", Accept: "application/json" })
      assert.includeMembers([...headers], ["Bearer hdr-token-1", "hdr-token-1"])
      assert.notInclude(headers, "json")
    })
  })
})

describe("Redaction.error and JSON", () => {
  it("masks what JSON.stringify shows of an Effect error, not only its message", () => {
    const e = new LifecycleError.TransportError({ toolset: "a", message: "bad sekrit-value-1" })
    const masked = Redaction.error(e, Redaction.make(["sekrit-value-1"]).text)
    assert.strictEqual(masked.message, "bad ***")
    assert.notInclude(JSON.stringify(masked), "sekrit-value-1")
    assert.include(JSON.stringify(e), "sekrit-value-1", "the original is left as it was")
  })
})
