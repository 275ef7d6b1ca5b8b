import { describe, expect, it } from 'vitest';
import { firstLineAt, pageOfLine, parseLogQuery } from './Logs';
import { arrangeSystemKeys } from './Run';

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
});

describe('system metrics layout', () => {
  it('puts GPU series per device in a fixed order, then CPU/memory, network, disk', () => {
    const out = arrangeSystemKeys(['network.sent_mb', 'gpu.1.temp', 'gpu.0.power_watts', 'cpu', 'gpu.0.temp', 'memory', 'gpu.0.gpu', 'disk.used', 'gpu.10.temp', 'weird']);
    expect(out.map((s) => s.section)).toEqual(['GPU 0', 'GPU 1', 'GPU 10', 'CPU & memory', 'Network', 'Disk', 'Other']);
    expect(out[0].charts.map((c) => c.key)).toEqual(['gpu.0.temp', 'gpu.0.gpu', 'gpu.0.power_watts']);
    expect(out[0].charts[0].title).toBe('GPU 0 temperature (°C)');
    expect(out[3].charts.map((c) => c.key)).toEqual(['cpu', 'memory']);
  });
});
