// Parallel coordinates of the workspace's runs: an axis per chosen config or summary field
// (numbers, log numbers, categories, booleans), a line per run coloured by a chosen field, and
// brushes (drag along an axis) that keep the runs inside every one of them in the table. Drawn
// on one canvas, a path per colour, so that 10,000 runs redraw in a few milliseconds. The axes,
// the colour field and the brushes live in the URL (`pc`, lib/compare.ts).
import { useMemo, useRef, useState } from 'preact/hooks';
import {
  brushFromUnits, brushUnits, describeBrush, fieldLabel, getter, inBrush, makeAxis, makeColorScale,
  type Axis, type Brush, type Field, type ParCoordsState,
} from '../lib/compare';
import type { Run } from '../lib/filters';
import { update } from '../lib/nav';
import type { AppState } from '../lib/url';
import { ColorLegend, FieldPicker, ScopeSelect, themeColors, useCanvas } from './FieldPicker';

export const PC_HEIGHT = 340;
const TOP = 14, BOTTOM = 14, LEFT = 64, RIGHT = 40;
/** How far from an axis (px) a drag starts a brush on it. */
const GRAB = 24;

function setPc(state: AppState, pc: ParCoordsState | undefined) {
  update({ panels: { ...state.panels, pc } });
}

interface Drag { axis: number; u0: number; u1: number }

export function ParallelCoords({ state, runs, fields }: { state: AppState; runs: Run[]; fields: Field[] }) {
  const pc = state.panels.pc!;
  const kinds = useMemo(() => new Map(fields.map((f) => [f.key, f.kind])), [fields]);
  const axesKey = pc.axes.join('\n');
  const axes = useMemo<Axis[]>(() => pc.axes.map((k) => makeAxis(k, runs, kinds.get(k))), [runs, axesKey, kinds]);
  const m = axes.length;
  // Each run's position on each axis (NaN: none), computed once per set of runs and axes.
  const units = useMemo(() => {
    const u = new Float32Array(runs.length * m);
    axes.forEach((a, j) => runs.forEach((r, i) => { u[i * m + j] = a.pos(a.value(r)) ?? NaN; }));
    return u;
  }, [axes]);
  const scale = useMemo(() => makeColorScale(pc.color, runs), [runs, pc.color]);
  // The runs of each colour (the last list: no value, grey).
  const byColor = useMemo(() => {
    const lists: number[][] = Array.from({ length: (scale?.colors.length ?? 0) + 1 }, () => []);
    runs.forEach((r, i) => { const b = scale ? scale.bin(r) : -1; lists[b < 0 ? lists.length - 1 : b].push(i); });
    return lists;
  }, [runs, scale]);

  const [drag, setDrag] = useState<Drag | null>(null);
  const brushKey = JSON.stringify(pc.brushes);
  // Inside every brush (the one being dragged by position, the others by value).
  const inside = useMemo(() => {
    const ok = new Uint8Array(runs.length).fill(1);
    const list = Object.entries(pc.brushes).filter(([k]) => !drag || pc.axes[drag.axis] !== k).map(([k, b]) => [getter(k), b] as const);
    if (list.length) runs.forEach((r, i) => { if (!list.every(([get, b]) => inBrush(get(r), b))) ok[i] = 0; });
    if (drag) {
      const lo = Math.min(drag.u0, drag.u1), hi = Math.max(drag.u0, drag.u1);
      for (let i = 0; i < runs.length; i++) { const u = units[i * m + drag.axis]; if (!(u >= lo && u <= hi)) ok[i] = 0; }
    }
    return ok;
  }, [runs, units, brushKey, drag]);
  const insideCount = useMemo(() => inside.reduce((n, x) => n + x, 0), [inside]);

  const xOf = (j: number, w: number) => (m <= 1 ? LEFT + (w - LEFT - RIGHT) / 2 : LEFT + (j * (w - LEFT - RIGHT)) / (m - 1));
  const plotH = PC_HEIGHT - TOP - BOTTOM;
  const yOf = (u: number) => TOP + (1 - u) * plotH;

  const { ref, width } = useCanvas(PC_HEIGHT, (ctx, w) => {
    const t0 = performance.now();
    const theme = themeColors(ref.current);
    const xs = axes.map((_, j) => xOf(j, w));
    const n = runs.length;
    const alpha = Math.max(0.12, Math.min(0.9, 25 / Math.sqrt(Math.max(1, n))));
    const path = (list: number[] | null, keep: 0 | 1) => {
      ctx.beginPath();
      const each = (i: number) => {
        if (inside[i] !== keep) return;
        let pen = false;
        for (let j = 0; j < m; j++) {
          const u = units[i * m + j];
          if (Number.isNaN(u)) { pen = false; continue; }
          if (pen) ctx.lineTo(xs[j], yOf(u)); else { ctx.moveTo(xs[j], yOf(u)); pen = true; }
        }
      };
      if (list) for (const i of list) each(i); else for (let i = 0; i < n; i++) each(i);
      ctx.stroke();
    };
    ctx.lineWidth = 1;
    if (m >= 2) {
      // Outside the brushes: faint grey underneath; inside: by colour.
      ctx.globalAlpha = Math.min(0.25, alpha);
      ctx.strokeStyle = '#9aa3b2';
      path(null, 0);
      ctx.globalAlpha = alpha;
      byColor.forEach((list, b) => {
        if (!list.length) return;
        ctx.strokeStyle = b < (scale?.colors.length ?? 0) ? scale!.colors[b] : (scale ? '#9aa3b2' : '#2f7de1');
        path(list, 1);
      });
    }
    ctx.globalAlpha = 1;
    // Axes, ticks and brushes.
    ctx.font = '10.5px system-ui, sans-serif';
    ctx.textBaseline = 'middle';
    axes.forEach((a, j) => {
      const x = xs[j];
      ctx.strokeStyle = theme.fg;
      ctx.lineWidth = 1;
      ctx.beginPath(); ctx.moveTo(x + 0.5, TOP); ctx.lineTo(x + 0.5, TOP + plotH); ctx.stroke();
      ctx.fillStyle = theme.fg;
      ctx.textAlign = 'right';
      const step = Math.max(1, Math.ceil(a.ticks.length / Math.max(1, plotH / 14)));
      a.ticks.forEach((t, k) => {
        if (k % step) return;
        const y = yOf(t.at);
        ctx.beginPath(); ctx.moveTo(x - 4, y); ctx.lineTo(x, y); ctx.stroke();
        const label = t.label.length > 12 ? t.label.slice(0, 11) + '…' : t.label;
        ctx.lineWidth = 3; ctx.globalAlpha = 0.75; ctx.strokeStyle = theme.panel; ctx.strokeText(label, x - 6, y); ctx.globalAlpha = 1;
        ctx.lineWidth = 1; ctx.strokeStyle = theme.fg; ctx.fillText(label, x - 6, y);
      });
      const b: [number, number] | null = drag && drag.axis === j ? [Math.min(drag.u0, drag.u1), Math.max(drag.u0, drag.u1)]
        : pc.brushes[a.key] ? brushUnits(a, pc.brushes[a.key]) : null;
      if (b) {
        ctx.fillStyle = 'rgba(47, 125, 225, 0.22)';
        ctx.strokeStyle = '#2f7de1';
        const y0 = yOf(b[1]), y1 = yOf(b[0]);
        ctx.fillRect(x - 8, y0, 16, Math.max(2, y1 - y0));
        ctx.strokeRect(x - 8 + 0.5, y0 + 0.5, 16, Math.max(2, y1 - y0));
      }
    });
    const c = ref.current!;
    c.dataset.drawn = `${n}:${m}:${insideCount}`;
    c.dataset.drawMs = (performance.now() - t0).toFixed(1);
  }, [units, inside, byColor, scale, drag, brushKey, axes]);

  // Brushing: a drag along an axis (mouse, pen or touch) sets its brush; a click on it (no drag)
  // clears it.
  const dragRef = useRef<Drag | null>(null);
  const unitAt = (clientY: number) => {
    const r = ref.current!.getBoundingClientRect();
    return Math.max(0, Math.min(1, 1 - (clientY - r.top - TOP) / plotH));
  };
  const onDown = (e: PointerEvent) => {
    if (e.button !== 0 || m === 0 || dragRef.current) return;
    const r = ref.current!.getBoundingClientRect();
    const x = e.clientX - r.left;
    let best = -1, dist = GRAB;
    for (let j = 0; j < m; j++) { const d = Math.abs(xOf(j, width) - x); if (d < dist) { dist = d; best = j; } }
    if (best < 0) return;
    e.preventDefault();
    const u = unitAt(e.clientY);
    dragRef.current = { axis: best, u0: u, u1: u };
    setDrag(dragRef.current);
    // Listeners added now, not in an effect: a quick click's mouseup may come before an effect.
    const move = (ev: PointerEvent) => {
      if (!dragRef.current) return;
      dragRef.current = { ...dragRef.current, u1: unitAt(ev.clientY) };
      setDrag(dragRef.current);
    };
    const up = () => {
      window.removeEventListener('pointermove', move);
      window.removeEventListener('pointerup', up);
      window.removeEventListener('pointercancel', up);
      const d = dragRef.current;
      dragRef.current = null;
      setDrag(null);
      if (!d) return;
      const a = axes[d.axis];
      const brushes: Record<string, Brush> = { ...pc.brushes };
      const b = Math.abs(d.u1 - d.u0) * plotH < 3 ? null : brushFromUnits(a, d.u0, d.u1);
      if (b) brushes[a.key] = b; else delete brushes[a.key];
      setPc(state, { ...pc, brushes });
    };
    window.addEventListener('pointermove', move);
    window.addEventListener('pointerup', up);
    window.addEventListener('pointercancel', up);
  };

  const removeAxis = (k: string) => {
    const brushes = { ...pc.brushes };
    delete brushes[k];
    setPc(state, { ...pc, axes: pc.axes.filter((x) => x !== k), brushes });
  };
  const moveAxis = (j: number, by: number) => {
    const axesNow = [...pc.axes];
    const k = j + by;
    if (k < 0 || k >= axesNow.length) return;
    [axesNow[j], axesNow[k]] = [axesNow[k], axesNow[j]];
    setPc(state, { ...pc, axes: axesNow });
  };
  const brushList = Object.entries(pc.brushes);

  return (
    <section class="compare-panel parcoords" aria-label="parallel coordinates" data-testid="parcoords">
      <div class="section-head">
        <h3>Parallel coordinates</h3>
        <span class="muted small" data-testid="pc-count">
          {runs.length.toLocaleString()} run{runs.length === 1 ? '' : 's'}
          {brushList.length > 0 && <> · <strong>{insideCount.toLocaleString()} inside the brushes</strong></>}
        </span>
        <FieldPicker fields={fields} label="add an axis" text="+ axis" exclude={pc.axes} onPick={(k) => setPc(state, { ...pc, axes: [...pc.axes, k] })} />
        <FieldPicker fields={fields} label="colour lines by" allowNone
          text={<>colour: {pc.color ? fieldLabel(pc.color) : 'none'}</>} onPick={(k) => setPc(state, { ...pc, color: k })} />
        <ScopeSelect label="parallel coordinates runs" value={pc.scope} onChange={(scope) => setPc(state, { ...pc, scope })} />
        <ColorLegend scale={scale} testid="pc-legend" />
        <button type="button" class="small close-panel" aria-label="close parallel coordinates" onClick={() => setPc(state, undefined)}>×</button>
      </div>
      {brushList.length > 0 && (
        <div class="brushes" data-testid="pc-brushes">
          {brushList.map(([k, b]) => (
            <span key={k} class="chip" data-brush={k}>
              {fieldLabel(k)}: {describeBrush(b)}
              <button type="button" class="x" aria-label={`clear the brush on ${fieldLabel(k)}`} onClick={() => { const n = { ...pc.brushes }; delete n[k]; setPc(state, { ...pc, brushes: n }); }}>×</button>
            </span>
          ))}
          {brushList.length > 1 && <button type="button" class="link small" onClick={() => setPc(state, { ...pc, brushes: {} })}>clear all brushes</button>}
        </div>
      )}
      {m < 2 && <div class="muted small">Add {m ? 'another axis' : 'two axes or more'} (+ axis): a config or summary field each.</div>}
      <div class="pc-axes" style={{ height: '34px' }}>
        {axes.map((a, j) => (
          <span key={a.key} class="pc-axis" data-axis={a.key} style={{ left: `${xOf(j, width)}px` }} title={`${a.key}${a.log ? ' (log scale)' : ''}: drag along the axis to brush`}>
            <span class="pc-axis-name">{fieldLabel(a.key)}{a.log ? ' (log)' : ''}</span>
            <span class="pc-axis-tools">
              {j > 0 && <button type="button" class="x" aria-label={`move ${fieldLabel(a.key)} left`} onClick={() => moveAxis(j, -1)}>‹</button>}
              <button type="button" class="x" aria-label={`remove the axis ${fieldLabel(a.key)}`} onClick={() => removeAxis(a.key)}>×</button>
              {j < m - 1 && <button type="button" class="x" aria-label={`move ${fieldLabel(a.key)} right`} onClick={() => moveAxis(j, 1)}>›</button>}
            </span>
          </span>
        ))}
      </div>
      <div class="pc-canvas">
        <canvas ref={ref} data-testid="pc-canvas" data-plot={`${TOP},${plotH}`} onPointerDown={onDown}
          aria-label="parallel coordinates plot: drag along an axis to select a range" role="img" />
      </div>
    </section>
  );
}
