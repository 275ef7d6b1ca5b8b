import { describe, expect, it } from 'vitest';
import { infLabel, nonfiniteTitle, TITLE_TAIL, titleInSection, titleParts } from './ChartPanel';

describe('chart titles', () => {
  it('drop the section the chart is grouped under', () => {
    expect(titleInSection('metrics/group_0/loss', 'metrics')).toBe('group_0/loss');
    expect(titleInSection('train/loss', 'train')).toBe('loss');
    expect(titleInSection('loss', '')).toBe('loss');
    expect(titleInSection('trainer/loss', 'train')).toBe('trainer/loss');
    expect(titleInSection('train/', 'train')).toBe('train/');
  });
  it('are cut in the middle: the end that tells long keys apart stays whole', () => {
    expect(titleParts('loss')).toEqual(['loss', '']);
    expect(titleParts('group_0/short_key_1')).toEqual(['group_0/short_key_1', '']);
    const keys = [3, 17].map((k) => `group_0/very_long_metric_name_for_the_model_number_${k}`);
    const [head3, tail3] = titleParts(keys[0]);
    const [head17, tail17] = titleParts(keys[1]);
    expect(head3 + tail3).toBe(keys[0]);
    expect(head17 + tail17).toBe(keys[1]);
    expect(tail3.length).toBe(TITLE_TAIL);
    expect(tail3).toBe('the_model_number_3');
    expect(tail17).toBe('he_model_number_17');
    // The heads (cut by CSS) read the same; the tails, always shown, tell the keys apart.
    expect(head17.slice(0, 30)).toBe(head3.slice(0, 30));
    expect(tail17).not.toBe(tail3);
    expect(titleParts('metrics/group_0/very_long_metric_name_number_12')[1]).toBe('metric_name_number_12'.slice(-TITLE_TAIL));
    // Characters outside the BMP are never split.
    const [h, t] = titleParts('x'.repeat(30) + '😀'.repeat(20));
    expect(t).toBe('😀'.repeat(TITLE_TAIL));
    expect(h).toBe('x'.repeat(30) + '😀'.repeat(20 - TITLE_TAIL));
  });
});

describe('the ±Inf badge', () => {
  it('counts points when they are known, says "at least" when buckets hide how many', () => {
    expect(infLabel(2, true)).toBe('2 ±Inf');
    expect(infLabel(1, false)).toBe('≥1 ±Inf');
    expect(nonfiniteTitle(2, true, 2)).toBe('points that are not numbers or infinite: drawn as gaps');
    const t = nonfiniteTitle(1, false, 1);
    expect(t).toMatch(/Infinite values in 1 bucket: a bucket tells that it holds infinities, not how many, so at least 1 point is infinite/);
    expect(nonfiniteTitle(3, false, 2)).toMatch(/in 2 buckets.*at least 3 points are infinite/);
  });
});
