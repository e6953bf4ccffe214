/**
 * The registry's Layers under their first name, kept for one release because the README taught
 * `Runtime.layerFile`; they are now `ToolsetRegistry.layer`, `ToolsetRegistry.layerFile` and
 * `ToolsetRegistry.watch`. (`Runtime` also shadowed `effect/Runtime`.)
 *
 * @deprecated Use the `ToolsetRegistry` module; `Runtime` goes in the next release.
 */
import * as ToolsetRegistry from "./ToolsetRegistry.ts"

/** @deprecated Use `ToolsetRegistry.LayerOptions`. */
export type Options = ToolsetRegistry.LayerOptions

/** @deprecated Use `ToolsetRegistry.FileOptions`. */
export type FileOptions = ToolsetRegistry.FileOptions

/** @deprecated Use `ToolsetRegistry.layer`. */
export const layer = ToolsetRegistry.layer

/** @deprecated Use `ToolsetRegistry.layerFile`. */
export const layerFile = ToolsetRegistry.layerFile

/** @deprecated Use `ToolsetRegistry.watch`. */
export const watch = ToolsetRegistry.watch
