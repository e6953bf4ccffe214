/**
 * The in-turn reprobe of docker-agent PR #2458: the runtime's one mechanism (`Reprobe` in
 * `@toolvisor/runtime`, which the MCP gateway shares), offered here beside the agent stacks that
 * check it at the start of a turn and after every tool-call batch.
 */
export * from "@toolvisor/runtime/Reprobe"
