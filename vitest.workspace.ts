/**
 * The test projects. Vitest 5 no longer reads this file by itself: vitest.config.ts imports it.
 * `npm test` runs them all; `npm run test:unit` all but the soak, `npm run test:soak` the soak.
 */
export default ["packages/*", "apps/*", "test", "vitest.soak.config.ts"]
