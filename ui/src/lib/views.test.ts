import { describe, expect, it } from 'vitest';
import { layoutOf, layoutState } from './views';
import { DEFAULT_STATE } from './url';

describe('a view layout', () => {
  const defaults = layoutState(undefined);

  it('is empty for the default state, and the defaults for a view without one', () => {
    expect(defaults).toEqual({ cby: '', panels: DEFAULT_STATE.panels, imp: '', x: 'step', log: false, smooth: 0 });
    expect(layoutOf(defaults)).toEqual({});
    expect(layoutState({})).toEqual(defaults);
  });

  it('round-trips the colour field, both panels, the importance metric and the chart options', () => {
    const panels = {
      pc: { axes: ['config.lr', 'summary.val_loss'], color: 'summary.val_loss', brushes: { 'summary.val_loss': [0.1, 0.4] as [number, number] }, scope: '' as const },
      sc: { x: 'config.lr', y: 'summary.acc', color: '', scope: 'visible' as const },
    };
    const s = { cby: 'config.optimizer', panels, imp: 'summary.acc', x: 'wall' as const, log: true, smooth: 0.6 };
    const l = layoutOf(s);
    expect(Object.keys(l).sort()).toEqual(['cby', 'imp', 'log', 'pc', 'sc', 'smooth', 'x']);
    const back = layoutState(JSON.parse(JSON.stringify(l)));
    expect(layoutOf(back)).toEqual(l);
    expect(back.cby).toBe('config.optimizer');
    expect(back.x).toBe('wall');
    expect(back.panels.pc?.axes).toEqual(['config.lr', 'summary.val_loss']);
    expect(back.panels.sc?.y).toBe('summary.acc');
    expect(back.panels).toEqual(panels);
  });

  it('ignores what a hand-edited layout gets wrong', () => {
    const bad = { cby: 3, pc: 42, sc: null, x: 'sideways', log: 'yes', smooth: 7 } as unknown as Parameters<typeof layoutState>[0];
    expect(layoutState(bad)).toEqual(defaults);
  });
});
