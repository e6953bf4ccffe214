// A stand-in server for the demo: it says "ready" on stdout after a short boot, then crashes
// with exit code 1 after the number of milliseconds given as its first argument.
const lifetime = Number(process.argv[2] ?? 500)
setTimeout(() => process.stdout.write("ready\n"), 100)
setTimeout(() => {
  process.stderr.write(`flaky-server: giving up after ${lifetime}ms\n`)
  process.exit(1)
}, lifetime)
