import { describe, expect, it } from 'vitest';
import { CHIPS_SHOWN, visibleChips } from './Compare';

const keys = Array.from({ length: 200 }, (_, i) => `m/${String(i).padStart(3, '0')}`);

describe('compare: metric chips', () => {
  it('shows the first dozen and the chosen ones, "+N more" for the rest', () => {
    const { shown, more } = visibleChips(keys, ['m/150', 'm/003'], '', false);
    expect(CHIPS_SHOWN).toBe(12);
    expect(shown).toEqual([...keys.slice(0, 12), 'm/150']);
    expect(more).toBe(200 - 12 - 1);
    // All of them on demand, in order, the chosen ones in place.
    const all = visibleChips(keys, ['m/150'], '', true);
    expect(all.shown).toEqual(keys);
    expect(all.more).toBe(187);
  });
  it('filters over every key, not only the ones shown', () => {
    const { shown, more } = visibleChips(keys, ['m/000'], '19', false);
    expect(shown).toEqual(['m/000', 'm/019', 'm/119', 'm/190', 'm/191', 'm/192', 'm/193', 'm/194', 'm/195', 'm/196', 'm/197', 'm/198', 'm/199']);
    expect(more).toBe(0);
    const wide = visibleChips(keys, [], '1', false);
    expect(wide.shown.length).toBe(12);
    expect(wide.more).toBe(keys.filter((k) => k.includes('1')).length - 12);
  });
  it('has nothing more to show for a few keys', () => {
    expect(visibleChips(['a', 'b'], ['a'], '', false)).toEqual({ shown: ['a', 'b'], more: 0 });
  });
});
