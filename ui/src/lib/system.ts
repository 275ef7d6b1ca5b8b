// System metrics as charts: one chart per metric (GPU temperature, CPU, ...) with a line per
// device and label, named consistently ("GPU temperature (°C)", never "mem_clock_mhz"), and the
// series that never change (total memory, clocks) folded into a table of constants.
// Pure functions: unit-tested in system.test.ts.
import type { ApiSeries } from './series';
import { naturalCompare } from './format';

/** A system key (without "system/") split into the metric and the device it measures. */
export interface SysKey {
  key: string;
  metric: string;
  /** The device or instance: "GPU 0", "core 3", "/data"; '' for one per machine. */
  instance: string;
  /** Orders instances naturally (GPU 2 before GPU 10). */
  order: number;
}

export function parseSystemKey(key: string): SysKey {
  let m = /^gpu\.(\d+)\.(.+)$/.exec(key);
  if (m) return { key, metric: `gpu.${m[2]}`, instance: `GPU ${m[1]}`, order: Number(m[1]) };
  m = /^cpu\.(\d+)$/.exec(key);
  if (m) return { key, metric: 'cpu.core', instance: `core ${m[1]}`, order: Number(m[1]) };
  m = /^disk\.(.+)\.used_percent$/.exec(key);
  if (m) return { key, metric: 'disk.used_percent', instance: m[1], order: 0 };
  return { key, metric: key, instance: '', order: 0 };
}

interface MetricInfo { title: string; section: string; order: number }

// Known metrics of the agent's monitor (src/agent/monitor): title with its unit, section, order.
const KNOWN: Record<string, MetricInfo> = {
  'gpu.gpu': { title: 'GPU utilisation (%)', section: 'GPU', order: 1 },
  'gpu.memory_allocated': { title: 'GPU memory allocated (%)', section: 'GPU', order: 2 },
  'gpu.memory': { title: 'GPU memory utilisation (%)', section: 'GPU', order: 3 },
  'gpu.memory_used_mb': { title: 'GPU memory used (MB)', section: 'GPU', order: 4 },
  'gpu.memory_total_mb': { title: 'GPU memory total (MB)', section: 'GPU', order: 5 },
  'gpu.temp': { title: 'GPU temperature (°C)', section: 'GPU', order: 6 },
  'gpu.power_watts': { title: 'GPU power (W)', section: 'GPU', order: 7 },
  'gpu.power_percent': { title: 'GPU power (% of limit)', section: 'GPU', order: 8 },
  'gpu.sm_clock_mhz': { title: 'GPU SM clock (MHz)', section: 'GPU', order: 9 },
  'gpu.mem_clock_mhz': { title: 'GPU memory clock (MHz)', section: 'GPU', order: 10 },
  cpu: { title: 'CPU (%)', section: 'CPU & memory', order: 20 },
  'cpu.core': { title: 'CPU per core (%)', section: 'CPU & memory', order: 21 },
  memory: { title: 'memory (%)', section: 'CPU & memory', order: 22 },
  'memory.used_mb': { title: 'memory used (MB)', section: 'CPU & memory', order: 23 },
  'proc.cpu': { title: 'process CPU (%)', section: 'CPU & memory', order: 24 },
  'proc.memory.rss_mb': { title: 'process memory RSS (MB)', section: 'CPU & memory', order: 25 },
  'network.sent_mb': { title: 'network sent (MB)', section: 'Network', order: 30 },
  'network.recv_mb': { title: 'network received (MB)', section: 'Network', order: 31 },
  'disk.used_percent': { title: 'disk used (%)', section: 'Disk', order: 40 },
  'disk.read_mb': { title: 'disk read (MB)', section: 'Disk', order: 41 },
  'disk.write_mb': { title: 'disk written (MB)', section: 'Disk', order: 42 },
};

const UNITS: [RegExp, string][] = [
  [/[._]mb$/, 'MB'], [/[._]gb$/, 'GB'], [/[._]mhz$/, 'MHz'], [/[._](watts|w)$/, 'W'],
  [/[._](percent|pct)$/, '%'], [/[._](temp|temperature|celsius|c)$/, '°C'], [/[._]ms$/, 'ms'], [/[._](s|seconds)$/, 's'],
];

/** Title, section and order of a metric: the known ones, else its name in words with its unit. */
export function metricInfo(metric: string): MetricInfo {
  const known = KNOWN[metric];
  if (known) return known;
  let name = metric;
  let unit = '';
  for (const [re, u] of UNITS) {
    if (re.test(name)) {
      unit = u;
      name = name.replace(re, u === '°C' ? '$&' : '');
      break;
    }
  }
  const gpu = name.startsWith('gpu.');
  const words = (gpu ? name.slice(4) : name).replace(/[._]+/g, ' ').trim();
  const title = `${gpu ? 'GPU ' : ''}${words}${unit ? ` (${unit})` : ''}`;
  const section = gpu ? 'GPU' : /^(network|net)/.test(metric) ? 'Network' : /^disk/.test(metric) ? 'Disk'
    : /^(cpu|memory|proc|mem)/.test(metric) ? 'CPU & memory' : 'Other';
  return { title, section, order: 1000 };
}

export interface SysMetricChart {
  metric: string;
  title: string;
  section: string;
  /** The keys drawn in this chart, instances in natural order. */
  keys: SysKey[];
}

const SECTION_ORDER = ['GPU', 'CPU & memory', 'Network', 'Disk', 'Other'];

/** One chart per metric, grouped in sections (GPU, CPU & memory, Network, Disk, Other). */
export function arrangeSystemMetrics(keys: string[]): { section: string; charts: SysMetricChart[] }[] {
  const byMetric = new Map<string, SysKey[]>();
  for (const key of new Set(keys)) {
    const k = parseSystemKey(key);
    if (!byMetric.has(k.metric)) byMetric.set(k.metric, []);
    byMetric.get(k.metric)!.push(k);
  }
  const charts: (SysMetricChart & { order: number })[] = [];
  for (const [metric, ks] of byMetric) {
    const info = metricInfo(metric);
    ks.sort((a, b) => a.order - b.order || naturalCompare(a.instance, b.instance));
    charts.push({ metric, title: info.title, section: info.section, order: info.order, keys: ks });
  }
  charts.sort((a, b) => SECTION_ORDER.indexOf(a.section) - SECTION_ORDER.indexOf(b.section)
    || a.order - b.order || naturalCompare(a.title, b.title));
  const out: { section: string; charts: SysMetricChart[] }[] = [];
  for (const { order: _o, ...c } of charts) {
    if (!out.length || out[out.length - 1].section !== c.section) out.push({ section: c.section, charts: [] });
    out[out.length - 1].charts.push(c);
  }
  return out;
}

/** A constant series: one value over its whole life (from a one-bucket query). */
export interface ConstantSeries { run: string; key: string; writer: string; value: number }

/**
 * Series that never changed, from the answer to a query with buckets=1 (min = max, no NaN).
 * Keyed by `${run}|${key}|${writer}`; the others are absent.
 */
export function constantSeries(series: ApiSeries[], run = ''): Map<string, ConstantSeries> {
  const out = new Map<string, ConstantSeries>();
  for (const s of series) {
    const b = s.buckets?.[0];
    if (!b || (s.buckets?.length ?? 0) !== 1) continue;
    if ((b.nan_count ?? 0) > 0 || typeof b.min !== 'number' || b.min !== b.max) continue;
    const r = s.run ?? run;
    out.set(`${r}|${s.key}|${s.writer}`, { run: r, key: s.key, writer: s.writer, value: b.min });
  }
  return out;
}

/** A line's name: the run (when several), the label (when several), the instance. A run with
 * one writer and a metric of the whole machine is named by the run, never by a writer id. */
export function systemLineName(o: { run?: string; label: string; instance: string; multiRun: boolean; multiLabel: boolean; runName: string }): string {
  const parts: string[] = [];
  if (o.multiRun) parts.push(o.runName);
  if (o.multiLabel) parts.push(o.label);
  if (o.instance) parts.push(o.instance);
  return parts.length ? parts.join(' · ') : o.runName;
}
