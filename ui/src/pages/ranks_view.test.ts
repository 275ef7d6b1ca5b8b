import { describe, expect, it } from 'vitest';
import type { Stragglers } from '../lib/api';
import { desyncText, inLabelOrder } from './Ranks';

describe('ranks view', () => {
  it('lists ranks in label order, whatever order they joined in', () => {
    expect(inLabelOrder(['rank_0', 'rank_1', 'rank_3', 'rank_2', 'rank_10'])).toEqual([0, 1, 3, 2, 4]);
  });
  it('says which rank is behind, by name, and that it stopped', () => {
    const m = (writer: string, last_step: number, state: string) => ({ run: 'r', writer, host: 'h', state, last_step } as any);
    const d = {
      members: [m('rank_0', 299, 'finished'), m('rank_1', 299, 'finished'), m('rank_2', 119, 'crashed')],
      desync: { flagged: true, step_gap: 180, start_gap: 0, reason: 'steps drift apart: member 0 is at step 299, member 2 at step 119', ahead: 0, behind: 2 },
    } as unknown as Stragglers;
    const text = desyncText(d, (i) => d.members[i].writer, (i) => d.members[i].state);
    expect(text).toBe('rank_2 is at step 119 (crashed: it stopped there), rank_0 at step 299: 180 steps apart');
    expect(text).not.toMatch(/member/);
  });
});
