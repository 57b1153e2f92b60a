import type { ExecutorConfig } from './config.js'

/** USD per million tokens, input and output. */
export interface Price {
  inPerMTok: number
  outPerMTok: number
}

// Purko's executor falls back to these list prices when the LLMProvider declares none.
const KNOWN: Record<string, Price> = {
  'claude-sonnet-4-6': { inPerMTok: 3, outPerMTok: 15 },
  'claude-opus-4-6': { inPerMTok: 15, outPerMTok: 75 },
  'claude-haiku-4-5': { inPerMTok: 0.8, outPerMTok: 4 },
  'gpt-4o': { inPerMTok: 2.5, outPerMTok: 10 },
  'gpt-4o-mini': { inPerMTok: 0.15, outPerMTok: 0.6 },
}

const FREE: Price = { inPerMTok: 0, outPerMTok: 0 }

/** Pure: MODEL_PRICE_IN/OUT when given, else the built-in list price of the model, else zero (offline is always free unless priced explicitly). */
export function priceFor(model: ExecutorConfig['model']): Price {
  if (model.price !== undefined) return model.price
  if (model.apiFormat === 'offline') return FREE
  return KNOWN[model.name] ?? FREE
}

/** Pure: the cost in USD of a token count at a price. */
export function costUsd(price: Price, tokensIn: number, tokensOut: number): number {
  return (tokensIn * price.inPerMTok + tokensOut * price.outPerMTok) / 1_000_000
}

/** Pure: a deterministic token estimate for text, one token per four characters rounded up. */
export function estimateTokens(text: string): number {
  return Math.ceil(text.length / 4)
}
