import { afterEach, describe, expect, it, vi } from 'vitest';
import { Api, ApiError, parseRetryAfter } from './api';
import { retryDelayMs, startLoad } from './load';

function recorder() {
  const events: string[] = [];
  const errors: unknown[] = [];
  return {
    events,
    errors,
    done: (v: unknown) => events.push(`done ${String(v)}`),
    setError: (e: unknown) => {
      errors.push(e);
      events.push(`error ${e instanceof ApiError ? `${e.status} ${e.code} ${e.message}` : e === null ? 'null' : String(e)}`);
    },
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
  it('the failure itself (an ApiError with its status and code, for ErrorBox) and not loading', async () => {
    const r = recorder();
    const notFound = new ApiError(404, 'not_found', 'no such run');
    startLoad(async () => { throw notFound; }, r.done, r.setError, r.setLoading);
    startLoad(async () => { throw new Error('boom'); }, r.done, r.setError, r.setLoading);
    await settle();
    expect(r.events).toEqual(['loading true', 'loading true', 'error 404 not_found no such run', 'loading false', 'error Error: boom', 'loading false']);
    expect(r.errors[0]).toBe(notFound);
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

  describe('a 429 or 503 is tried once more', () => {
    afterEach(() => { vi.useRealTimers(); });
    it('after its Retry-After (1 s without one, at most 10 s); nothing else is retried', () => {
      expect(retryDelayMs(new ApiError(429, 'rate_limited', 'slow down', 2000))).toBe(2000);
      expect(retryDelayMs(new ApiError(503, 'unavailable', 'busy'))).toBe(1000);
      expect(retryDelayMs(new ApiError(503, 'unavailable', 'busy', 3_600_000))).toBe(10_000);
      expect(retryDelayMs(new ApiError(500, 'internal', 'broke'))).toBe(null);
      expect(retryDelayMs(new ApiError(0, 'unavailable', 'cannot reach the server'))).toBe(null);
      expect(retryDelayMs(new Error('boom'))).toBe(null);
    });
    it('a refusal that passes shows no error: the value comes after the wait, loading all along', async () => {
      vi.useFakeTimers();
      const r = recorder();
      let calls = 0;
      startLoad(async () => {
        if (++calls === 1) throw new ApiError(429, 'rate_limited', 'slow down', 500);
        return 'ok';
      }, r.done, r.setError, r.setLoading);
      await vi.advanceTimersByTimeAsync(499);
      expect(calls).toBe(1);
      expect(r.events).toEqual(['loading true']);
      await vi.advanceTimersByTimeAsync(1);
      expect(calls).toBe(2);
      expect(r.events).toEqual(['loading true', 'done ok', 'error null', 'loading false']);
    });
    it('a second refusal is shown (for a Retry button); an abort during the wait stops the retry', async () => {
      vi.useFakeTimers();
      const r = recorder();
      let calls = 0;
      startLoad(async () => { calls++; throw new ApiError(503, 'unavailable', 'busy'); }, r.done, r.setError, r.setLoading);
      await vi.advanceTimersByTimeAsync(5000);
      expect(calls).toBe(2);
      expect(r.events).toEqual(['loading true', 'error 503 unavailable busy', 'loading false']);
      const r2 = recorder();
      let calls2 = 0;
      const abort = startLoad(async () => { calls2++; throw new ApiError(503, 'unavailable', 'busy'); }, r2.done, r2.setError, r2.setLoading);
      await vi.advanceTimersByTimeAsync(10);
      abort();
      await vi.advanceTimersByTimeAsync(5000);
      expect(calls2).toBe(1);
      expect(r2.events).toEqual(['loading true']);
    });
  });

  it("the ApiError of a 429 or 503 carries the server's Retry-After", async () => {
    expect(parseRetryAfter('2')).toBe(2000);
    expect(parseRetryAfter('Wed, 21 Oct 2015 07:28:05 GMT', Date.UTC(2015, 9, 21, 7, 28, 0))).toBe(5000);
    expect(parseRetryAfter(null)).toBe(undefined);
    expect(parseRetryAfter('soon')).toBe(undefined);
    vi.stubGlobal('fetch', async () => new Response(JSON.stringify({ error: { code: 'rate_limited', message: 'slow down' } }),
      { status: 429, headers: { 'Content-Type': 'application/json', 'Retry-After': '3' } }));
    try {
      const e = await new Api('').run('e', 'p', 'r').catch((x) => x);
      expect(e).toBeInstanceOf(ApiError);
      expect([e.status, e.code, e.message, e.retryAfterMs]).toEqual([429, 'rate_limited', 'slow down', 3000]);
    } finally {
      vi.unstubAllGlobals();
    }
  });
});
