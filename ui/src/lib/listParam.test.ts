import { describe, expect, it } from 'vitest';
import { listParam, splitListParam } from './listParam';

describe('listParam', () => {
  it('joins plain items with commas', () => {
    expect(listParam([])).toBe('');
    expect(listParam(['loss'])).toBe('loss');
    expect(listParam(['loss', 'eval/acc'])).toBe('loss,eval/acc');
  });

  it('escapes a comma or backslash inside an item', () => {
    expect(listParam(['acc,top5', 'loss'])).toBe('acc\\,top5,loss');
    expect(listParam(['node,1'])).toBe('node\\,1');
    expect(listParam(['a\\', 'b'])).toBe('a\\\\,b');
    expect(listParam(['\\,'])).toBe('\\\\\\,');
  });

  it('gives back every item as the server splits the list', () => {
    for (const items of [['acc,top5'], ['node,1', 'node,2'], [',', '\\', '\\,', ',\\'], ['a\\b', 'c\\', 'système']]) {
      expect(splitListParam(listParam(items))).toEqual(items);
    }
  });
});

describe('splitListParam', () => {
  it('reads lists as the server does (src/core/list_param_test.cc)', () => {
    expect(splitListParam('')).toEqual([]);
    expect(splitListParam(null)).toEqual([]);
    expect(splitListParam(',loss,,acc,')).toEqual(['loss', 'acc']);
    expect(splitListParam('acc\\,top5,loss')).toEqual(['acc,top5', 'loss']);
    expect(splitListParam('a\\\\,b')).toEqual(['a\\', 'b']);
    expect(splitListParam('a\\\\\\,b')).toEqual(['a\\,b']);
    expect(splitListParam('a\\b')).toEqual(['a\\b']); // a '\' before anything else stays
    expect(splitListParam('a\\')).toEqual(['a\\']);
  });
});
