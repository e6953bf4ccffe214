/**
 * The loader and the JSON Schemas over the corpus of real config files in `test/corpus` (see its
 * README): every file gets the verdict its manifest records, the variables it needs are named when
 * they are missing (and only the toolsets that need them are held back), and the JSON Schema of the detected format says yes exactly when the loader does.
 */
import * as NodeFs from "node:fs"
import * as NodePath from "node:path"
import { assert, describe, it } from "@effect/vitest"
import { Ajv2020 } from "ajv/dist/2020.js"
import * as Effect from "effect/Effect"
import * as Predicate from "effect/Predicate"
import * as ConfigLoader from "../src/ConfigLoader.ts"
import * as ConfigText from "../src/ConfigText.ts"
import * as HostConfig from "../src/HostConfig.ts"
import * as Interpolation from "../src/Interpolation.ts"
import * as JsonSchema from "../src/JsonSchema.ts"

const corpus = NodePath.resolve(import.meta.dirname, "../../../test/corpus")

interface Entry {
  readonly file: string
  readonly repo: string
  readonly commit: string
  readonly format: string
  readonly expect: "loads" | "invalid" | "not-a-config"
  readonly readAs?: string
  readonly toolsets?: number
  readonly skipped?: number
  readonly warnings?: number
  readonly needs?: ReadonlyArray<string>
  readonly reason?: string
  readonly schemaAccepts?: boolean
}

const manifest: ReadonlyArray<Entry> = JSON.parse(NodeFs.readFileSync(NodePath.join(corpus, "manifest.json"), "utf8"))
const pathOf = (entry: Entry) => NodePath.join(corpus, entry.file)

/** Only the variables a file needs, each set: the verdict must not depend on the machine's environment. */
const envFor = (entry: Entry) => Object.fromEntries((entry.needs ?? []).map((name) => [name, "value"]))

/** The manifest names an input as the variable that supplies it, `TOOLVISOR_INPUT_<ID>`. */
const inputOrVariable = (variable: string) =>
  variable.startsWith("input:") ? Interpolation.inputVariable(variable.slice("input:".length)) : variable

/** `parse`, not `load`: the verdict is the file's own text, read with only the variables below. */
const load = (entry: Entry, env: Record<string, string>) => {
  const path = pathOf(entry)
  const text = NodeFs.readFileSync(path, "utf8")
  const options = { source: path, baseDir: NodePath.dirname(path), format: ConfigText.syntaxOf(path, text), env }
  return Effect.result(ConfigLoader.parse(text, options))
}

describe("the corpus", () => {
  it("holds at least 100 real files, each with its source, in every format", () => {
    assert.isAtLeast(manifest.length, 100)
    for (const entry of manifest) {
      assert.match(entry.commit, /^[0-9a-f]{40}$/, entry.file)
      assert.match(entry.repo, /^[\w.-]+\/[\w.-]+$/, entry.file)
      assert.isTrue(NodeFs.existsSync(pathOf(entry)), entry.file)
      if (entry.expect !== "loads") assert.isString(entry.reason, `${entry.file} says why it fails`)
    }
    const formats = new Set(manifest.map((entry) => entry.format))
    for (const format of ["docker-agent", "mcp-json", "claude-plugin", "claude-desktop", "cursor", "vscode"]) {
      assert.isTrue(formats.has(format), format)
    }
    for (const format of ["gemini", "cline", "windsurf", "zed"]) assert.isTrue(formats.has(format), format)
  })
})

describe("the loader over the corpus", () => {
  for (const entry of manifest) {
    it.effect(`${entry.file}: ${entry.expect}`, () =>
      Effect.gen(function* () {
        const result = yield* load(entry, envFor(entry))
        if (entry.expect === "loads") {
          assert.strictEqual(result._tag, "Success", result._tag === "Failure" ? result.failure.message : "")
          if (result._tag !== "Success") return
          assert.strictEqual(result.success.format, entry.readAs)
          assert.strictEqual(result.success.toolsets.length, entry.toolsets)
          assert.strictEqual(result.success.skipped.length, entry.skipped)
          assert.strictEqual(result.success.warnings?.length ?? 0, entry.warnings)
          return
        }
        assert.strictEqual(result._tag, "Failure")
        if (result._tag !== "Failure") return
        const notAFormat = /Not a config format Toolvisor reads/.test(result.failure.message)
        assert.strictEqual(notAFormat, entry.expect === "not-a-config", result.failure.message)
      })
    )
  }

  it.effect("with nothing set, a file that needs variables or inputs still loads, each one named in a warning", () =>
    Effect.gen(function* () {
      const needy = manifest.filter((entry) => entry.expect === "loads" && (entry.needs ?? []).length > 0)
      assert.isAtLeast(needy.length, 5)
      for (const entry of needy) {
        const result = yield* load(entry, {})
        assert.strictEqual(result._tag, "Success", result._tag === "Failure" ? result.failure.message : entry.file)
        if (result._tag !== "Success") continue
        const warned = (result.success.warnings ?? []).map((warning) => warning.message).join("\n")
        const unresolved = result.success.toolsets.flatMap((t) => (t.unresolved ?? []).map((lack) => lack.variable))
        for (const name of entry.needs ?? []) {
          assert.include(warned, name, entry.file)
          assert.isTrue(
            unresolved.some((variable) => inputOrVariable(variable) === name),
            `${entry.file}: ${name} unresolved`
          )
        }
        // The same toolsets as with every variable set: none is dropped, none added.
        assert.strictEqual(result.success.toolsets.length, entry.toolsets, entry.file)
      }
    })
  )
})

describe("the JSON Schemas over the corpus", () => {
  const ajv = new Ajv2020({ strict: true, strictRequired: false, allErrors: true })
  const validators = new Map(JsonSchema.formats.map((format) => [format, ajv.compile(JsonSchema.make(format))]))
  const documentOf = (entry: Entry) => {
    const text = NodeFs.readFileSync(pathOf(entry), "utf8")
    return ConfigText.parse(text, ConfigText.syntaxOf(entry.file, text), entry.file)
  }

  it.effect("the schema of the detected format accepts exactly the files the loader accepts", () =>
    Effect.gen(function* () {
      const disagreements: Array<string> = []
      for (const entry of manifest.filter((e) => e.expect !== "not-a-config")) {
        const document = yield* documentOf(entry)
        const format = Predicate.isObject(document) ? HostConfig.detect(document, entry.file) : undefined
        assert.isDefined(format, entry.file)
        if (format === undefined) continue
        const accepts = validators.get(JsonSchema.formatOf(format))?.(document) === true
        const expected = entry.expect === "loads" || entry.schemaAccepts === true
        if (accepts !== expected) disagreements.push(`${entry.file}: schema ${accepts}, loader ${entry.expect}`)
      }
      assert.deepStrictEqual(disagreements, [])
    })
  )

  it.effect("a file in no format is rejected by every schema", () =>
    Effect.gen(function* () {
      for (const entry of manifest.filter((e) => e.expect === "not-a-config")) {
        const document = yield* documentOf(entry)
        for (const [format, validate] of validators) assert.isFalse(validate(document), `${entry.file} as ${format}`)
      }
    })
  )
})
