import { describe, expect, it } from 'vitest';
import { widthAfterResize } from './useVisibleWidth';

describe('widthAfterResize', () => {
  it('keeps the width for a change of 10% or less, takes the new one beyond', () => {
    expect(widthAfterResize(1000, 1000)).toBe(1000);
    expect(widthAfterResize(1000, 1100)).toBe(1000);
    expect(widthAfterResize(1000, 900)).toBe(1000);
    expect(widthAfterResize(1000, 1101)).toBe(1101);
    expect(widthAfterResize(1000, 899)).toBe(899);
  });
  it('a panel first measured at 0 px (hidden) takes the first real width', () => {
    expect(widthAfterResize(0, 640)).toBe(640);
    expect(widthAfterResize(0, 0)).toBe(0);
  });
});
