/** The test projects. Vitest 5 no longer reads this file by itself: vitest.config.ts imports it. */
export default ["packages/*", "apps/*", "test"]
