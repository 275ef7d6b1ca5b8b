// useProjectRuns without a DOM: preact's hooks replaced by a one-render stand-in (state kept in
// slots, the effect run once), the API's runsPage by a mock, timers faked.
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { ApiError } from './api';
import type { Run } from './filters';

const slots: unknown[] = [];
let slot = 0;
vi.mock('preact/hooks', () => ({
  useState: (init: unknown) => {
    const i = slot++;
    if (!(i in slots)) slots[i] = typeof init === 'function' ? (init as () => unknown)() : init;
    return [slots[i], (v: unknown) => { slots[i] = typeof v === 'function' ? (v as (x: unknown) => unknown)(slots[i]) : v; }];
  },
  useRef: (init: unknown) => {
    const i = slot++;
    if (!(i in slots)) slots[i] = { current: init };
    return slots[i];
  },
  useEffect: (fn: () => void) => { fn(); },
}));
const runsPage = vi.fn();
vi.mock('./api', async (orig) => ({ ...(await orig<typeof import('./api')>()), api: { runsPage: (...a: unknown[]) => runsPage(...a) } }));

const { useProjectRuns } = await import('./runstore');

const run = (id: string, updated_ms: number) => ({ id, name: id, state: 'finished', writer_count: 1, updated_ms, created_ms: 1 }) as unknown as Run;

beforeEach(() => {
  vi.useFakeTimers();
  vi.stubGlobal('document', { hidden: false });
  slots.length = 0;
  slot = 0;
  runsPage.mockReset();
});
afterEach(() => { vi.useRealTimers(); vi.unstubAllGlobals(); });

describe('useProjectRuns', () => {
  it("a failed refresh shows its error; the next one that goes through clears it, though no run changed", async () => {
    const runs = [run('a', 1000), run('b', 2000)];
    runsPage.mockResolvedValueOnce({ runs, next_cursor: null, total: 2 }); // the first load
    runsPage.mockRejectedValueOnce(new ApiError(503, 'unavailable', 'store unavailable')); // an outage
    runsPage.mockResolvedValue({ runs: [runs[1], runs[0]], next_cursor: null, total: 2 }); // back, nothing new
    useProjectRuns('e', 'p', 4000);
    const st = () => slots[0] as { runs: Run[]; error: unknown; loaded: boolean };
    await vi.advanceTimersByTimeAsync(0);
    expect(st().loaded).toBe(true);
    expect(st().runs.map((r) => r.id)).toEqual(['a', 'b']);
    expect(st().error).toBe(null);
    await vi.advanceTimersByTimeAsync(4000);
    expect(runsPage).toHaveBeenCalledTimes(2);
    expect((st().error as ApiError).status).toBe(503);
    expect(st().runs.map((r) => r.id)).toEqual(['a', 'b']);
    await vi.advanceTimersByTimeAsync(4000);
    expect(runsPage).toHaveBeenCalledTimes(3);
    expect(st().error).toBe(null);
    expect(st().runs.map((r) => r.id)).toEqual(['a', 'b']);
  });
});
