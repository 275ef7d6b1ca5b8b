// The workspace's filter bar: name search, job type, states, tags, the filter builder (field,
// operator, value over config, summary, tags and dates: the API's filter clauses), grouping and
// the column picker. Every control writes the URL.
import { useEffect, useMemo, useState } from 'preact/hooks';
import { columnLabel, describeClause, STATES, type Clause, type Op, type Run, type UiFilters } from '../lib/filters';
import { update } from '../lib/nav';
import { naturalCompare, valueAt } from '../lib/format';
import type { AppState } from '../lib/url';
import { Popover } from '../components/ChartPanel';

export function FilterBar(p: {
  filters: UiFilters; jobTypes: string[]; searchRef: { current: HTMLInputElement | null }; state: AppState;
  runs: Run[]; configKeys: string[]; summaryKeys: string[]; columns: string[];
}) {
  const f = p.filters;
  const set = (patch: Partial<UiFilters>, replace = false) => update({ filters: { ...f, ...patch } }, replace);
  const [tagText, setTagText] = useState(f.tags.join(', '));
  useEffect(() => setTagText(f.tags.join(', ')), [f.tags.join(',')]);
  return (
    <div class="filterbar" role="search">
      <input ref={p.searchRef} type="search" class="search" placeholder="Search names  ( / )" aria-label="search run names"
        value={f.name} onInput={(e) => set({ name: (e.target as HTMLInputElement).value }, true)} />
      <span class="fgroup">
        <label for="jt-op">Job type</label>
        <select id="jt-op" aria-label="job type operator" value={f.jobType?.op ?? '=='}
          onChange={(e) => set({ jobType: { op: (e.target as HTMLSelectElement).value as '==' | '!=', value: f.jobType?.value ?? '' } })}>
          <option value="==">is</option>
          <option value="!=">is not</option>
        </select>
        <select aria-label="job type" data-testid="jobtype-value" value={f.jobType?.value ?? ''}
          onChange={(e) => { const v = (e.target as HTMLSelectElement).value; set({ jobType: v ? { op: f.jobType?.op ?? '==', value: v } : null }); }}>
          <option value="">any</option>
          {[...new Set([...p.jobTypes, ...(f.jobType?.value ? [f.jobType.value] : [])])].map((j) => <option key={j} value={j}>{j}</option>)}
        </select>
      </span>
      <fieldset class="fgroup states">
        <legend>State</legend>
        {STATES.map((s) => (
          <label key={s} class={`chip state-${s}`}>
            <input type="checkbox" checked={f.states.includes(s)}
              onChange={(e) => set({ states: (e.target as HTMLInputElement).checked ? [...f.states, s] : f.states.filter((x) => x !== s) })} />
            {s}
          </label>
        ))}
      </fieldset>
      <span class="fgroup">
        <label for="tags">Tags</label>
        <input id="tags" type="text" size={10} placeholder="a, b" value={tagText}
          onInput={(e) => setTagText((e.target as HTMLInputElement).value)}
          onChange={() => set({ tags: tagText.split(',').map((t) => t.trim()).filter(Boolean) })} />
      </span>
      <FilterBuilder runs={p.runs} configKeys={p.configKeys} summaryKeys={p.summaryKeys}
        onAdd={(c) => set({ extra: [...f.extra, c] })} />
      {f.extra.length > 0 && (
        <span class="fgroup extra" data-testid="filter-chips">
          {f.extra.map((c, i) => (
            <span class="chip" key={i} data-field={c.field}>{describeClause(c)}
              <button type="button" class="x" aria-label={`remove filter ${describeClause(c)}`} onClick={() => set({ extra: f.extra.filter((_x, j) => j !== i) })}>×</button></span>
          ))}
        </span>
      )}
      <span class="fgroup">
        <label for="groupby">Group by</label>
        <select id="groupby" value={p.state.groupBy} onChange={(e) => update({ groupBy: (e.target as HTMLSelectElement).value as AppState['groupBy'] })}>
          <option value="">none</option>
          <option value="group">group</option>
          <option value="job_type">job type</option>
        </select>
      </span>
      <ColumnPicker configKeys={p.configKeys} summaryKeys={p.summaryKeys} columns={p.columns} explicit={p.state.columns.length > 0} />
    </div>
  );
}

// ---- the filter builder ----------------------------------------------------------------------

type Kind = 'number' | 'text' | 'tag' | 'date';

interface FieldChoice { field: string; label: string; kind: Kind }

const OPS: Record<Kind, { op: Op; label: string }[]> = {
  number: [{ op: '>', label: '>' }, { op: '<', label: '<' }, { op: '==', label: '=' }, { op: '!=', label: '≠' }],
  text: [{ op: '==', label: 'is' }, { op: '!=', label: 'is not' }, { op: '~', label: 'contains' }],
  tag: [{ op: '==', label: 'has' }, { op: '!=', label: 'has not' }, { op: '~', label: 'contains' }],
  date: [{ op: '>', label: 'after' }, { op: '<', label: 'before' }],
};

/** Whether a field's values are numbers in these runs. */
function kindOf(runs: Run[], field: string): Kind {
  if (field === 'created' || field === 'updated') return 'date';
  if (field === 'tag') return 'tag';
  if (!field.startsWith('config.') && !field.startsWith('summary.')) return 'text';
  const dot = field.indexOf('.');
  const doc = field.slice(0, dot) as 'config' | 'summary';
  const key = field.slice(dot + 1);
  const path = key.split('.');
  let numbers = 0, others = 0;
  for (let i = 0; i < runs.length && i < 500; i++) {
    const v = valueAt(runs[i][doc], key, path);
    if (typeof v === 'number') numbers++;
    else if (v !== undefined && v !== null) others++;
  }
  return numbers > 0 && numbers >= others ? 'number' : 'text';
}

function FilterBuilder({ runs, configKeys, summaryKeys, onAdd }: { runs: Run[]; configKeys: string[]; summaryKeys: string[]; onAdd: (c: Clause) => void }) {
  const [open, setOpen] = useState(false);
  const fields = useMemo<FieldChoice[]>(() => [
    ...configKeys.map((k) => ({ field: 'config.' + k, label: `config: ${k}`, kind: 'number' as Kind })),
    ...summaryKeys.map((k) => ({ field: 'summary.' + k, label: `summary: ${k}`, kind: 'number' as Kind })),
    { field: 'tag', label: 'tag', kind: 'tag' as Kind },
    { field: 'created', label: 'created', kind: 'date' as Kind },
    { field: 'updated', label: 'last update', kind: 'date' as Kind },
    { field: 'name', label: 'name', kind: 'text' as Kind },
    { field: 'group', label: 'group', kind: 'text' as Kind },
    { field: 'host', label: 'host', kind: 'text' as Kind },
  ], [configKeys.join(','), summaryKeys.join(',')]);
  const [field, setField] = useState('');
  const kind = field ? kindOf(runs, field) : 'text';
  const [op, setOp] = useState<Op>('>');
  const [value, setValue] = useState('');
  const [err, setErr] = useState('');
  // A new field resets the operator and the value in the same event, not in an effect: an effect
  // runs after the paint and would wipe an operator or value chosen in between (a fast user, a
  // loaded machine).
  const chooseField = (next: string) => {
    setField(next);
    setOp(OPS[next ? kindOf(runs, next) : 'text'][0].op);
    setValue('');
    setErr('');
  };
  const add = (e: Event) => {
    e.preventDefault();
    if (!field) { setErr('choose a field'); return; }
    let v: string | number = value.trim();
    if (kind === 'date') {
      const ms = Date.parse(value);
      if (!Number.isFinite(ms)) { setErr('enter a date and time'); return; }
      v = ms;
    } else if (kind === 'number' && (op === '<' || op === '>')) {
      const n = Number(v);
      if (v === '' || !Number.isFinite(n)) { setErr('enter a number'); return; }
      v = n;
    } else if (v === '') { setErr('enter a value'); return; }
    onAdd({ field, op, value: v });
    setOpen(false);
    chooseField('');
  };
  return (
    <span class="fgroup picker">
      <button type="button" class="small" aria-expanded={open} onClick={() => setOpen(!open)}>+ Filter</button>
      {open && (
        <Popover onClose={() => setOpen(false)} label="add a filter" class="filter-builder">
          <form onSubmit={add} class="builder-form">
            <select aria-label="filter field" value={field} onChange={(e) => chooseField((e.target as HTMLSelectElement).value)}>
              <option value="">field…</option>
              {fields.map((f) => <option key={f.field} value={f.field}>{f.label}</option>)}
            </select>
            <select aria-label="filter operator" value={op} onChange={(e) => setOp((e.target as HTMLSelectElement).value as Op)} disabled={!field}>
              {OPS[kind].map((o) => <option key={o.op} value={o.op}>{o.label}</option>)}
            </select>
            {kind === 'date'
              ? <input type="datetime-local" aria-label="filter value" value={value} onInput={(e) => setValue((e.target as HTMLInputElement).value)} disabled={!field} />
              : <input type="text" aria-label="filter value" value={value} size={12} onInput={(e) => setValue((e.target as HTMLInputElement).value)} disabled={!field}
                  list={field ? 'filter-values' : undefined} />}
            <datalist id="filter-values">
              {field && valuesOf(runs, field).map((v) => <option key={v} value={v} />)}
            </datalist>
            <button type="submit" class="small primary">Add</button>
            {err && <span class="form-error" role="alert">{err}</span>}
          </form>
        </Popover>
      )}
    </span>
  );
}

/** Distinct values a field takes in the runs (for the value suggestions). */
function valuesOf(runs: Run[], field: string): string[] {
  const out = new Set<string>();
  for (let i = 0; i < runs.length && i < 2000 && out.size < 50; i++) {
    const r = runs[i];
    let v: unknown;
    if (field === 'tag') { for (const t of r.tags ?? []) out.add(t); continue; }
    if (field.startsWith('config.')) v = valueAt(r.config, field.slice(7));
    else if (field.startsWith('summary.')) v = valueAt(r.summary, field.slice(8));
    else v = (r as unknown as Record<string, unknown>)[field === 'group' ? 'group' : field];
    if (typeof v === 'number' || typeof v === 'string' || typeof v === 'boolean') out.add(String(v));
  }
  return [...out].sort(naturalCompare);
}

// ---- columns ---------------------------------------------------------------------------------

function ColumnPicker({ configKeys, summaryKeys, columns, explicit }: { configKeys: string[]; summaryKeys: string[]; columns: string[]; explicit: boolean }) {
  const [open, setOpen] = useState(false);
  const [q, setQ] = useState('');
  const toggle = (col: string, on: boolean) => update({ columns: on ? [...columns, col] : columns.filter((c) => c !== col) });
  const all = [...configKeys.map((k) => 'config.' + k), ...summaryKeys];
  const shown = all.filter((c) => c.toLowerCase().includes(q.toLowerCase())).slice(0, 300);
  return (
    <span class="fgroup picker">
      <button type="button" class="small" aria-expanded={open} onClick={() => setOpen(!open)}>Columns ▾</button>
      {open && (
        <Popover onClose={() => setOpen(false)} label="table columns" class="columns-popover">
          <input type="search" placeholder="filter" aria-label="filter columns" value={q} onInput={(e) => setQ((e.target as HTMLInputElement).value)} />
          {explicit && <button type="button" class="link" onClick={() => update({ columns: [] })}>default columns</button>}
          {!all.length && <div class="muted">No config or summary values yet.</div>}
          {shown.map((c) => (
            <label key={c} class="row">
              <input type="checkbox" checked={columns.includes(c)} onChange={(e) => toggle(c, (e.target as HTMLInputElement).checked)} />
              <span class="muted small">{c.startsWith('config.') ? 'config' : 'summary'}</span> {columnLabel(c)}
            </label>
          ))}
        </Popover>
      )}
    </span>
  );
}
