// Runs paramImportance off the main thread: a workspace of 10,000 runs keeps scrolling and
// filtering while the forest trains (docs/ui.md, "Parameter importance").
import { paramImportance, type ImportanceInput } from './importance';

export interface ImportanceRequest { id: number; metric: string; runs: ImportanceInput[] }

self.onmessage = (e: MessageEvent<ImportanceRequest>) => {
  const { id, metric, runs } = e.data;
  const t0 = performance.now();
  try {
    const result = paramImportance(runs, metric);
    (self as any).postMessage({ id, result, ms: performance.now() - t0 });
  } catch (err) {
    (self as any).postMessage({ id, error: String((err as Error)?.message ?? err) });
  }
};
