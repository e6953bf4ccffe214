/**
 * Toolvisor runtime: the toolset registry, its catalog and status stream, as Layers.
 *
 * Modules under `src/internal/` (the in-process registry, routing, the dashboard, the status
 * feed, secret masking…) are not part of this API and may change in any release.
 */
export * as Catalog from "./Catalog.ts"
export * as Deferral from "./Deferral.ts"
export * as HttpGate from "./HttpGate.ts"
export * as Inspection from "./Inspection.ts"
export * as OrphanSweep from "./OrphanSweep.ts"
export * as OtlpExport from "./OtlpExport.ts"
export * as Reprobe from "./Reprobe.ts"
/** @deprecated The registry's Layers are `ToolsetRegistry.layer` and `ToolsetRegistry.layerFile`; `Runtime` goes in the next release. */
export * as Runtime from "./Runtime.ts"
export * as StatusHttp from "./StatusHttp.ts"
export * as StatusJson from "./StatusJson.ts"
export * as Surfaces from "./Surfaces.ts"
export * as Telemetry from "./Telemetry.ts"
export * as ToolSearch from "./ToolSearch.ts"
export * as ToolsetRegistry from "./ToolsetRegistry.ts"
export * as Toolsets from "./Toolsets.ts"
export * as Unresolved from "./Unresolved.ts"
