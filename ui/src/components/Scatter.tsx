// Scatter of the workspace's runs: any two config or summary fields as x and y (categories
// spread a little within their band), colour by a third; hovering a point names its run, a click
// opens it. Runs outside the parallel coordinates' brushes are drawn grey. One canvas; the
// nearest point is found by a scan of the points' pixels (10,000 in well under a millisecond).
import { useMemo, useState } from 'preact/hooks';
import { fieldLabel, fieldValue, getter, makeAxis, makeColorScale, type Axis, type Brush, type Field, type ScatterState, inBrush } from '../lib/compare';
import type { Run } from '../lib/filters';
import { fmtNum } from '../lib/format';
import { navigate, update } from '../lib/nav';
import { linkTo, type AppState } from '../lib/url';
import { ColorLegend, FieldPicker, ScopeSelect, themeColors, useCanvas } from './FieldPicker';

export const SC_HEIGHT = 360;
const TOP = 12, BOTTOM = 34, LEFT = 64, RIGHT = 16;
/** Inside the frame: the points at the ends of a range are not cut by it. */
const PAD = 8;
const R = 3;
/** How near (px) the pointer must be to a point to name it. */
const HIT = 8;

function setSc(state: AppState, sc: ScatterState | undefined) {
  update({ panels: { ...state.panels, sc } });
}

/** A run's spread within its category's band (stable: from its id). */
function jitter(id: string): number {
  let h = 2166136261;
  for (let i = 0; i < id.length; i++) h = Math.imul(h ^ id.charCodeAt(i), 16777619);
  return ((h >>> 0) % 1000) / 1000 - 0.5;
}

function unitOf(a: Axis, r: Run): number {
  const u = a.pos(a.value(r));
  if (u === null) return NaN;
  return a.kind === 'num' ? u : u + (jitter(r.id) * 0.6) / Math.max(1, a.cats.length);
}

export function Scatter({ state, runs, fields, brushes }: { state: AppState; runs: Run[]; fields: Field[]; brushes: Record<string, Brush> }) {
  const sc = state.panels.sc!;
  const kinds = useMemo(() => new Map(fields.map((f) => [f.key, f.kind])), [fields]);
  const ax = useMemo(() => (sc.x ? makeAxis(sc.x, runs, kinds.get(sc.x)) : null), [runs, sc.x, kinds]);
  const ay = useMemo(() => (sc.y ? makeAxis(sc.y, runs, kinds.get(sc.y)) : null), [runs, sc.y, kinds]);
  const scale = useMemo(() => makeColorScale(sc.color, runs), [runs, sc.color]);
  // Positions 0..1 (NaN: the run lacks x or y).
  const pts = useMemo(() => {
    const ux = new Float32Array(runs.length).fill(NaN), uy = new Float32Array(runs.length).fill(NaN);
    if (ax && ay) runs.forEach((r, i) => { ux[i] = unitOf(ax, r); uy[i] = unitOf(ay, r); });
    return { ux, uy };
  }, [ax, ay]);
  const brushKey = JSON.stringify(brushes);
  const inside = useMemo(() => {
    const list = Object.entries(brushes).map(([k, b]) => [getter(k), b] as const);
    return runs.map((r) => list.every(([get, b]) => inBrush(get(r), b)));
  }, [runs, brushKey]);
  const [hover, setHover] = useState<{ i: number; x: number; y: number } | null>(null);

  const plotH = SC_HEIGHT - TOP - BOTTOM;
  // Positions 0..1 to pixels, within the frame less PAD on each side.
  const px = (u: number, w: number) => LEFT + PAD + u * (w - LEFT - RIGHT - 2 * PAD);
  const py = (u: number) => TOP + PAD + (1 - u) * (plotH - 2 * PAD);

  const { ref, width } = useCanvas(SC_HEIGHT, (ctx, w) => {
    const t0 = performance.now();
    const theme = themeColors(ref.current);
    const n = runs.length;
    let drawn = 0;
    ctx.strokeStyle = theme.border;
    ctx.strokeRect(LEFT + 0.5, TOP + 0.5, w - LEFT - RIGHT, plotH);
    if (ax && ay) {
      // Grid and tick labels.
      ctx.font = '10.5px system-ui, sans-serif';
      ctx.fillStyle = theme.fg;
      ctx.textAlign = 'center'; ctx.textBaseline = 'top';
      const xstep = Math.max(1, Math.ceil(ax.ticks.length / Math.max(1, (w - LEFT - RIGHT) / 70)));
      ax.ticks.forEach((t, k) => { if (k % xstep === 0) { const x = px(t.at, w); ctx.fillRect(x, TOP + plotH, 1, 4); ctx.fillText(t.label.slice(0, 14), x, TOP + plotH + 6); } });
      ctx.textAlign = 'right'; ctx.textBaseline = 'middle';
      const ystep = Math.max(1, Math.ceil(ay.ticks.length / Math.max(1, plotH / 16)));
      ay.ticks.forEach((t, k) => { if (k % ystep === 0) { const y = py(t.at); ctx.fillRect(LEFT - 4, y, 4, 1); ctx.fillText(t.label.slice(0, 10), LEFT - 6, y); } });
      const alpha = Math.max(0.35, Math.min(0.9, 40 / Math.sqrt(Math.max(1, n))));
      const { ux, uy } = pts;
      // Outside the brushes (grey, under), then by colour.
      ctx.globalAlpha = 0.3;
      ctx.fillStyle = '#9aa3b2';
      for (let i = 0; i < n; i++) if (!inside[i] && ux[i] === ux[i] && uy[i] === uy[i]) { ctx.fillRect(px(ux[i], w) - 2, py(uy[i]) - 2, 4, 4); drawn++; }
      ctx.globalAlpha = alpha;
      const bins = (scale?.colors.length ?? 0) + 1;
      const lists: number[][] = Array.from({ length: bins }, () => []);
      for (let i = 0; i < n; i++) {
        if (!inside[i] || ux[i] !== ux[i] || uy[i] !== uy[i]) continue;
        const b = scale ? scale.bin(runs[i]) : -1;
        lists[b < 0 ? bins - 1 : b].push(i);
      }
      lists.forEach((list, b) => {
        if (!list.length) return;
        ctx.fillStyle = b < bins - 1 ? scale!.colors[b] : (scale ? '#9aa3b2' : '#2f7de1');
        ctx.beginPath();
        for (const i of list) { const x = px(ux[i], w), y = py(uy[i]); ctx.moveTo(x + R, y); ctx.arc(x, y, R, 0, 2 * Math.PI); }
        ctx.fill();
        drawn += list.length;
      });
      ctx.globalAlpha = 1;
      if (hover) {
        ctx.strokeStyle = theme.fg; ctx.lineWidth = 2;
        ctx.beginPath(); ctx.arc(hover.x, hover.y, R + 3, 0, 2 * Math.PI); ctx.stroke();
        ctx.lineWidth = 1;
      }
    }
    const c = ref.current!;
    c.dataset.drawn = `${n}:${drawn}`;
    c.dataset.drawMs = (performance.now() - t0).toFixed(1);
  }, [pts, inside, scale, hover]);

  const nearest = (e: MouseEvent) => {
    const r = ref.current!.getBoundingClientRect();
    const mx = e.clientX - r.left, my = e.clientY - r.top;
    const { ux, uy } = pts;
    let best = -1, bd = HIT * HIT, bx = 0, by = 0;
    for (let i = 0; i < ux.length; i++) {
      if (ux[i] !== ux[i] || uy[i] !== uy[i]) continue;
      const x = px(ux[i], width), y = py(uy[i]);
      const d = (x - mx) ** 2 + (y - my) ** 2;
      if (d <= bd) { bd = d; best = i; bx = x; by = y; }
    }
    return best < 0 ? null : { i: best, x: bx, y: by };
  };
  const onMove = (e: MouseEvent) => {
    const h = nearest(e);
    if (h?.i !== hover?.i) setHover(h);
  };
  const onClick = (e: MouseEvent) => {
    const h = nearest(e);
    if (h) navigate(linkTo(state, { run: runs[h.i].id, group: '' }));
  };
  const hr = hover ? runs[hover.i] : null;

  return (
    <section class="compare-panel scatter" aria-label="scatter" data-testid="scatter">
      <div class="section-head">
        <h3>Scatter</h3>
        <FieldPicker fields={fields} label="scatter x" text={<>x: {sc.x ? fieldLabel(sc.x) : 'choose'}</>} onPick={(k) => setSc(state, { ...sc, x: k })} />
        <FieldPicker fields={fields} label="scatter y" text={<>y: {sc.y ? fieldLabel(sc.y) : 'choose'}</>} onPick={(k) => setSc(state, { ...sc, y: k })} />
        <FieldPicker fields={fields} label="colour points by" allowNone text={<>colour: {sc.color ? fieldLabel(sc.color) : 'none'}</>}
          onPick={(k) => setSc(state, { ...sc, color: k })} />
        <ScopeSelect label="scatter runs" value={sc.scope} onChange={(scope) => setSc(state, { ...sc, scope })} />
        <ColorLegend scale={scale} testid="sc-legend" />
        <button type="button" class="small close-panel" aria-label="close scatter" onClick={() => setSc(state, undefined)}>×</button>
      </div>
      {!(ax && ay) && <div class="muted small">Choose an x and a y field.</div>}
      <div class="sc-canvas" style={{ position: 'relative' }}>
        <canvas ref={ref} data-testid="sc-canvas" data-plot={`${LEFT + PAD},${TOP + PAD},${RIGHT + PAD},${plotH - 2 * PAD}`} role="img"
          aria-label="scatter plot: hover a point to name its run, click to open it"
          style={{ cursor: hover ? 'pointer' : 'crosshair' }} onMouseMove={onMove} onMouseLeave={() => setHover(null)} onClick={onClick} />
        {ax && ay && <div class="sc-xlabel muted small">{fieldLabel(ax.key)}{ax.log ? ' (log)' : ''}</div>}
        {ax && ay && <div class="sc-ylabel muted small">{fieldLabel(ay.key)}{ay.log ? ' (log)' : ''}</div>}
        {hr && hover && (
          <div class="sc-tip" role="tooltip" data-testid="sc-tip" style={{ left: `${Math.min(hover.x + 12, width - 220)}px`, top: `${hover.y < SC_HEIGHT - 110 ? hover.y + 12 : hover.y - 104}px` }}>
            <strong>{hr.name || hr.id}</strong>
            <div>{fieldLabel(sc.x)}: {fmtNum(fieldValue(hr, sc.x))}</div>
            <div>{fieldLabel(sc.y)}: {fmtNum(fieldValue(hr, sc.y))}</div>
            {sc.color && <div>{fieldLabel(sc.color)}: {fmtNum(fieldValue(hr, sc.color))}</div>}
            <div class="muted small">click to open</div>
          </div>
        )}
      </div>
    </section>
  );
}
