#!/usr/bin/env node
// The published entry: the compiled CLI (`npm run build` writes dist/). Needs Node >= 22.19.
import "../dist/main.js"
