#!/usr/bin/env node
// The published entry: the bundled CLI (`npm run build` writes bundle/). Needs Node >= 22.19.
// Node's compile cache keeps the bundle's compiled code on disk: later starts skip compiling it.
import * as NodeModule from "node:module"

NodeModule.enableCompileCache?.()
await import("../bundle/main.js")
