/**
 * How cluster members encode what they send each other: newline-delimited JSON, on clients and
 * runners alike (a member that encodes otherwise cannot be understood). Effect's default, its
 * schema-binary encoding, was measured slower for these messages: every call pays it twice on
 * each side (bench:cluster, issue 28). Both encodings bound a message to 16 MiB.
 */
import * as RpcSerialization from "effect/rpc/RpcSerialization"

/** The encoding, as a layer. */
export const layer = RpcSerialization.layerNdjson
