/**
 * Supertypes and subtypes of the type at a position: the LSP 3.17 requests
 * (`textDocument/prepareTypeHierarchy`, then `typeHierarchy/supertypes` or `/subtypes`), and
 * clangd's earlier extension for servers that advertise `typeHierarchyProvider` but answer the
 * standard request with "method not found" — clangd before 15, e.g. Debian 12's clangd 14.
 */
import * as Effect from "effect/Effect"
import * as Protocol from "vscode-languageserver-protocol"
import type * as LspConnector from "../LspConnector.ts"
import * as Requests from "./requests.ts"

export type Direction = "supertypes" | "subtypes"

/** A type as both protocols describe it. */
export interface Type {
  readonly name: string
  readonly kind: Protocol.SymbolKind
  readonly uri: string
  readonly selectionRange: Protocol.Range
}

/** The type at the position and its direct supertypes or subtypes; `undefined` when no type is there. */
export interface Hierarchy {
  readonly item: Type
  readonly types: ReadonlyArray<Type>
}

/** clangd's `TypeHierarchyItem`: the item itself carries its resolved parents or children. */
interface LegacyItem extends Type {
  readonly parents?: ReadonlyArray<LegacyItem>
  readonly children?: ReadonlyArray<LegacyItem>
}

interface LegacyParams extends Protocol.TextDocumentPositionParams {
  /** Levels to resolve. */
  readonly resolve: number
  /** 0: children, 1: parents, 2: both. */
  readonly direction: 0 | 1 | 2
}

const legacyRequest = new Protocol.RequestType<LegacyParams, LegacyItem | null, unknown>("textDocument/typeHierarchy")

const standard = (
  session: LspConnector.LspSession,
  position: Protocol.TextDocumentPositionParams,
  direction: Direction
) =>
  Effect.gen(function* () {
    const item = (yield* session.request(Protocol.TypeHierarchyPrepareRequest.type, position))?.[0]
    if (item === undefined) return undefined
    const types =
      direction === "supertypes"
        ? yield* session.request(Protocol.TypeHierarchySupertypesRequest.type, { item })
        : yield* session.request(Protocol.TypeHierarchySubtypesRequest.type, { item })
    return { item, types: types ?? [] } satisfies Hierarchy
  })

const legacy = (
  session: LspConnector.LspSession,
  position: Protocol.TextDocumentPositionParams,
  direction: Direction
) =>
  session
    .request(legacyRequest, { ...position, resolve: 1, direction: direction === "supertypes" ? 1 : 0 })
    .pipe(
      Effect.map((item): Hierarchy | undefined =>
        item === null ? undefined : { item, types: (direction === "supertypes" ? item.parents : item.children) ?? [] }
      )
    )

const methodNotFound = (error: Requests.RequestError) =>
  error instanceof Requests.ResponseFailed && error.code === Protocol.ErrorCodes.MethodNotFound

/** The hierarchy one level up or down from the type at `position`. */
export const around = (
  session: LspConnector.LspSession,
  position: Protocol.TextDocumentPositionParams,
  direction: Direction
): Effect.Effect<Hierarchy | undefined, Requests.RequestError> =>
  standard(session, position, direction).pipe(
    Effect.catchIf(methodNotFound, () => legacy(session, position, direction))
  )
