/**
 * Loopback ports for tests that start real servers: one free port, and the wait until something
 * accepts connections on it (a server's "listening" log line is printed even when the port is taken).
 */
import * as NodeNet from "node:net"

/** A TCP port on 127.0.0.1 that was free a moment ago (bound, read, released). */
export const freePort = (): Promise<number> =>
  new Promise((resolve, reject) => {
    const server = NodeNet.createServer()
    server.once("error", reject)
    server.listen(0, "127.0.0.1", () => {
      const address = server.address()
      const port = typeof address === "object" && address !== null ? address.port : 0
      server.close(() => resolve(port))
    })
  })

const connects = (port: number): Promise<boolean> =>
  new Promise((resolve) => {
    const socket = NodeNet.connect(port, "127.0.0.1")
    socket.once("connect", () => {
      socket.destroy()
      resolve(true)
    })
    socket.once("error", () => resolve(false))
  })

/** Resolves once a TCP connect to the port succeeds; rejects after `within` ms. */
export const awaitListening = async (port: number, within = 20_000): Promise<void> => {
  const deadline = Date.now() + within
  while (Date.now() < deadline) {
    if (await connects(port)) return
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
  throw new Error(`nothing listened on 127.0.0.1:${port} within ${within} ms`)
}
