// A saved view's workspace layout besides its filters, grouping, sort and columns: what the runs'
// lines are coloured by, the comparison panels (parallel coordinates and scatter, in their URL
// form: compare.ts), the importance panel's metric, and the charts' x axis, log scale and
// smoothing. Saving a view keeps them; applying it restores them (a view saved before layouts
// existed, or one of the seed's, restores the defaults).
import { decodeCompare, encodeCompare } from './compare';
import type { ViewLayout } from './filters';
import { DEFAULT_STATE, type AppState } from './url';

export type LayoutState = Pick<AppState, 'cby' | 'panels' | 'imp' | 'x' | 'log' | 'smooth'>;

/** The layout of `s`: only what differs from the defaults (so that equal layouts compare
 * equal as JSON). */
export function layoutOf(s: LayoutState): ViewLayout {
  const out: ViewLayout = {};
  if (s.cby) out.cby = s.cby;
  const { pc, sc } = encodeCompare(s.panels);
  if (pc) out.pc = pc;
  if (sc) out.sc = sc;
  if (s.imp) out.imp = s.imp;
  if (s.x !== DEFAULT_STATE.x) out.x = s.x;
  if (s.log) out.log = true;
  if (s.smooth > 0) out.smooth = s.smooth;
  return out;
}

/** The state a view's layout restores; defaults for what it does not say (or says wrongly). */
export function layoutState(l: ViewLayout | undefined): LayoutState {
  const x = l?.x;
  const smooth = typeof l?.smooth === 'number' && l.smooth > 0 && l.smooth < 1 ? l.smooth : 0;
  return {
    cby: typeof l?.cby === 'string' ? l.cby : '',
    panels: decodeCompare(typeof l?.pc === 'string' ? l.pc : null, typeof l?.sc === 'string' ? l.sc : null),
    imp: typeof l?.imp === 'string' ? l.imp : '',
    x: x === 'rel' || x === 'wall' || x === 'step' ? x : DEFAULT_STATE.x,
    log: l?.log === true,
    smooth,
  };
}
