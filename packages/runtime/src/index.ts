/** Toolvisor runtime: the toolset registry, its catalog and status stream, as Layers. */
export * as Catalog from "./Catalog.ts"
export * as LocalRegistry from "./LocalRegistry.ts"
export * as OrphanSweep from "./OrphanSweep.ts"
export * as Runtime from "./Runtime.ts"
export * as Secrets from "./Secrets.ts"
export * as Telemetry from "./Telemetry.ts"
export * as ToolsetRegistry from "./ToolsetRegistry.ts"
export * as Toolsets from "./Toolsets.ts"
