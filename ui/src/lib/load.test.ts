import { describe, expect, it } from 'vitest';
import { ApiError } from './api';
import { startLoad } from './load';

function recorder() {
  const events: string[] = [];
  return {
    events,
    done: (v: unknown) => events.push(`done ${String(v)}`),
    setError: (e: string | null) => events.push(`error ${e}`),
    setLoading: (b: boolean) => events.push(`loading ${b}`),
  };
}
const settle = () => new Promise((r) => setTimeout(r, 0));

describe('startLoad', () => {
  it('loading, then the value, no error, not loading', async () => {
    const r = recorder();
    startLoad(async () => 7, r.done, r.setError, r.setLoading);
    await settle();
    expect(r.events).toEqual(['loading true', 'done 7', 'error null', 'loading false']);
  });
  it("a failure's message (an ApiError's own) and not loading", async () => {
    const r = recorder();
    startLoad(async () => { throw new ApiError(404, 'not_found', 'no such run'); }, r.done, r.setError, r.setLoading);
    startLoad(async () => { throw new Error('boom'); }, r.done, r.setError, r.setLoading);
    await settle();
    expect(r.events).toEqual(['loading true', 'loading true', 'error no such run', 'loading false', 'error Error: boom', 'loading false']);
  });
  it('nothing once aborted, and the load sees the abort', async () => {
    const r = recorder();
    let seen: AbortSignal | null = null;
    const abort = startLoad(async (signal) => { seen = signal; return 1; }, r.done, r.setError, r.setLoading);
    abort();
    await settle();
    expect(r.events).toEqual(['loading true']);
    expect(seen!.aborted).toBe(true);
    const r2 = recorder();
    startLoad(async () => { throw Object.assign(new Error('x'), { name: 'AbortError' }); }, r2.done, r2.setError, r2.setLoading);
    await settle();
    expect(r2.events).toEqual(['loading true']);
  });
});
