import { describe, expect, it } from 'vitest';
import { extendIndex, firstLineAt, lineNumberOf, pageHolding, pageOfLine, parseLogQuery } from './Logs';

describe('logs', () => {
  it('reads label: tokens out of the search bar', () => {
    expect(parseLogQuery('label:rank_0 NCCL error')).toEqual({ labels: ['rank_0'], text: 'NCCL error' });
    expect(parseLogQuery('x label:rank_1,rank_2')).toEqual({ labels: ['rank_1', 'rank_2'], text: 'x' });
    expect(parseLogQuery('plain')).toEqual({ labels: [], text: 'plain' });
  });
  it('finds the page of a line', () => {
    const pages = [{ after: 0, start: 0 }, { after: 99, start: 1000 }, { after: 150, start: 1300 }];
    expect(pageOfLine(pages, 0)).toBe(0);
    expect(pageOfLine(pages, 999)).toBe(0);
    expect(pageOfLine(pages, 1000)).toBe(1);
    expect(pageOfLine(pages, 1299)).toBe(1);
    expect(pageOfLine(pages, 5000)).toBe(2);
  });
  it('maps scroll positions to lines, exactly when small and scaled for a million lines', () => {
    expect(firstLineAt(18 * 50, 1000, 30)).toBe(50);
    const total = 1_000_000, rows = 30;
    expect(firstLineAt(0, total, rows)).toBe(0);
    expect(firstLineAt(8_000_000 - rows * 18, total, rows)).toBe(total - rows);
    const mid = firstLineAt((8_000_000 - rows * 18) / 2, total, rows);
    expect(Math.abs(mid - (total - rows) / 2)).toBeLessThanOrEqual(1);
  });
  it('numbers a filtered line by its place in the whole log', () => {
    // Whole log: pages of 1000 lines; page 1 starts after id 1500 and holds ids 1501, 1503, ...
    const pages = [{ after: 0, start: 0 }, { after: 1500, start: 1000 }, { after: 4000, start: 2000 }];
    expect(pageHolding(pages, 1)).toBe(0);
    expect(pageHolding(pages, 1500)).toBe(0);
    expect(pageHolding(pages, 1501)).toBe(1);
    expect(pageHolding(pages, 9999)).toBe(2);
    const ids = new Map([[1, [1501, 1503, 1507, 1600]]]);
    expect(lineNumberOf(pages, ids, 1507)).toBe(1002);
    expect(lineNumberOf(pages, ids, 1502)).toBeNull(); // not a line of that page
    expect(lineNumberOf(pages, ids, 20)).toBeNull(); // its page is not loaded
  });
  it('extends the live index once per batch of new lines, never twice with the same answer', () => {
    const cur = { total: 1500, lastId: 1500, pages: [{ after: 0, start: 0 }, { after: 1000, start: 1000 }], key: 'k' };
    const ix = { total: 30, stride: 1000, cursors: [1500], last_id: 1530 };
    const once = extendIndex(cur, 1500, ix);
    expect(once).toEqual({ total: 1530, lastId: 1530, pages: [...cur.pages, { after: 1500, start: 1500 }], key: 'k' });
    // A second request sent after 1500 before the first answered: its answer counts nothing again.
    expect(extendIndex(once, 1500, ix)).toBe(once);
    expect(extendIndex(once, 1530, { total: 0, stride: 1000, cursors: [], last_id: 1530 })).toBe(once);
  });
});
