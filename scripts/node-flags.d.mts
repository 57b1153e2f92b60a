// Types for scripts/node-flags.mjs.

/** The V8 flags every function's Service passes to node before its entry point. */
export declare const FUNCTION_NODE_FLAGS: readonly string[]
