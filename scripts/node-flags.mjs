// The V8 flags every function's Knative Service starts node with (knative/services/*.yaml args,
// before the entry point). The build's code cache training run uses the same flags: V8 refuses
// a code cache made under other flags, so the two must not drift (test/knative/wiring.test.ts).
//
// The young generation is capped at 2 MiB per semi-space (V8's default grows it to 16 MiB):
// a function's live heap is under 30 MiB, and with the default the scavenger's spaces alone
// kept RSS 25-30 MiB higher without handling events any faster (bench/memory.ts).
export const FUNCTION_NODE_FLAGS = ['--max-semi-space-size=2']
