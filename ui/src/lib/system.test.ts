import { describe, expect, it } from 'vitest';
import { arrangeSystemMetrics, constantSeries, metricInfo, parseSystemKey, systemLineName } from './system';

describe('system metrics layout', () => {
  it('makes one chart per metric with a line per device, sections in a fixed order', () => {
    const out = arrangeSystemMetrics(['network.sent_mb', 'gpu.1.temp', 'gpu.0.power_watts', 'cpu', 'gpu.0.temp', 'memory',
      'gpu.0.gpu', 'disk./.used_percent', 'gpu.10.temp', 'gpu.2.temp', 'weird_thing_mhz', 'gpu.0.mem_clock_mhz', 'cpu.3', 'cpu.12']);
    expect(out.map((s) => s.section)).toEqual(['GPU', 'CPU & memory', 'Network', 'Disk', 'Other']);
    const gpu = out[0].charts;
    expect(gpu.map((c) => c.title)).toEqual(['GPU utilisation (%)', 'GPU temperature (°C)', 'GPU power (W)', 'GPU memory clock (MHz)']);
    expect(gpu[1].keys.map((k) => k.instance)).toEqual(['GPU 0', 'GPU 1', 'GPU 2', 'GPU 10']);
    expect(out[1].charts.map((c) => c.title)).toEqual(['CPU (%)', 'CPU per core (%)', 'memory (%)']);
    expect(out[1].charts[1].keys.map((k) => k.instance)).toEqual(['core 3', 'core 12']);
    expect(out[3].charts[0].keys[0].instance).toBe('/');
    expect(out[4].charts[0].title).toBe('weird thing (MHz)');
  });
  it('names metrics with their units, never with raw keys', () => {
    expect(metricInfo('gpu.memory_total_mb').title).toBe('GPU memory total (MB)');
    expect(metricInfo('gpu.fan_speed_percent').title).toBe('GPU fan speed (%)');
    expect(parseSystemKey('gpu.3.sm_clock_mhz')).toEqual({ key: 'gpu.3.sm_clock_mhz', metric: 'gpu.sm_clock_mhz', instance: 'GPU 3', order: 3 });
  });
  it('finds the series that never changed', () => {
    const b = (min: number, max: number, nan = 0) => [{ step_min: 0, step_max: 9, time_min: 0, time_max: 9, count: 10, nan_count: nan, min, max, mean: min, first: min, last: max }];
    const c = constantSeries([
      { run: 'r', key: 'gpu.0.memory_total_mb', writer: 'rank_0', buckets: b(81920, 81920) },
      { run: 'r', key: 'gpu.0.temp', writer: 'rank_0', buckets: b(50, 61) },
      { run: 'r', key: 'gpu.0.gpu', writer: 'rank_0', buckets: b(90, 90, 2) },
    ]);
    expect([...c.keys()]).toEqual(['r|gpu.0.memory_total_mb|rank_0']);
    expect(c.get('r|gpu.0.memory_total_mb|rank_0')!.value).toBe(81920);
  });
  it('names lines by run, label and device only when they tell lines apart', () => {
    expect(systemLineName({ label: 'vm-b4j0', instance: '', multiRun: false, multiLabel: false, runName: 'my-run' })).toBe('my-run');
    expect(systemLineName({ label: 'rank_1', instance: 'GPU 1', multiRun: false, multiLabel: true, runName: 'x' })).toBe('rank_1 · GPU 1');
    expect(systemLineName({ label: 'rank_0', instance: 'GPU 0', multiRun: true, multiLabel: false, runName: 'ddp-rank0' })).toBe('ddp-rank0 · GPU 0');
  });
});
