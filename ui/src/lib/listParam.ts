// The list syntax of the read API's list parameters (`keys=`, `writers=`, `labels=`, `runs=`;
// docs/api.md "List parameters"), which the app's own URL state (url.ts) uses too: items
// separated by `,`, each `,` inside an item written `\,` and each `\` written `\\`, so that a
// metric key or writer label holding either (`acc,top5`, `node,1`) stays one item. The server
// reads it with SplitListParam (src/core/list_param.h). Pure: unit-tested in listParam.test.ts.

/** `items` as one list parameter: each escaped, joined with `,`. Every request that names keys,
 * writers, labels or runs builds its list here. */
export function listParam(items: readonly string[]): string {
  return items.map((i) => i.replace(/[\\,]/g, '\\$&')).join(',');
}

/** The items of a list parameter, as the server reads it: `\,` and `\\` unescaped, a `\` before
 * anything else kept, empty items left out. */
export function splitListParam(text: string | null | undefined): string[] {
  const out: string[] = [];
  if (!text) return out;
  let item = '';
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (c === '\\' && (text[i + 1] === ',' || text[i + 1] === '\\')) item += text[++i];
    else if (c === ',') { if (item) out.push(item); item = ''; } else item += c;
  }
  if (item) out.push(item);
  return out;
}
