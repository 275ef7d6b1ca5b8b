import { describe, expect, it } from 'vitest';
import { numericColumns, stepIndexOf, stepParamOf, tableCellText } from './Media';

describe('media tables', () => {
  it('write numbers short, without binary noise, their full value in the tooltip', () => {
    expect(tableCellText(0.6000000000000001)).toEqual({ text: '0.6', title: '0.6000000000000001' });
    expect(tableCellText(0.1 + 0.2)).toEqual({ text: '0.3', title: '0.30000000000000004' });
    expect(tableCellText(42)).toEqual({ text: '42' });
    expect(tableCellText(0.25)).toEqual({ text: '0.25' });
    expect(tableCellText(1.23456789e-7).text).toBe('1.235e-7');
    expect(tableCellText('cat')).toEqual({ text: 'cat' });
    expect(tableCellText(true)).toEqual({ text: 'true' });
    expect(tableCellText({ a: 1 })).toEqual({ text: '{"a":1}' });
  });
  it('align a numeric column right, its nulls too', () => {
    const rows = [[0, 'a', 0.5, null], [1, 'b', null, null], [2, null, 'NaN', 'x'], [3, 'c', 'Infinity', 4]];
    // id: numbers; label: text; p: numbers with a null and non-finite ones; mixed: not numeric.
    expect(numericColumns(rows, 4)).toEqual([true, false, true, false]);
    expect(numericColumns([[null]], 1)).toEqual([false]);
  });
});

describe('media step in the URL', () => {
  const steps = [0, 5, 10, 20];
  it('none is the latest; a logged step is its index; another the latest before it', () => {
    expect(stepIndexOf(steps, null)).toBe(3);
    expect(stepIndexOf(steps, 0)).toBe(0);
    expect(stepIndexOf(steps, 10)).toBe(2);
    expect(stepIndexOf(steps, 7)).toBe(1);
    expect(stepIndexOf(steps, 1000)).toBe(3);
    expect(stepIndexOf([3, 4], 1)).toBe(0);
    expect(stepIndexOf([], 4)).toBe(0);
  });
  it('the slider at the last step writes none (the latest is followed), elsewhere the step', () => {
    expect(stepParamOf(steps, 3)).toBeNull();
    expect(stepParamOf(steps, 0)).toBe(0);
    expect(stepParamOf(steps, 2)).toBe(10);
    for (let i = 0; i < steps.length; i++) expect(stepIndexOf(steps, stepParamOf(steps, i))).toBe(i);
  });
});
