// W&B page paths (what its clients print, what users paste) → this app's screens and URL.
import { afterEach, describe, expect, it, vi } from 'vitest';
import { adoptVendorPath, canonicalHref, stateOfVendorPath } from './nav';
import { decodeState, encodeState, pageOf, DEFAULT_STATE, structuredCloneState, type AppState } from './url';

const none = { run: '', group: '', art: '', ver: '', alerts: false, cmp: [] };

/** The state the app shows for `pathname` + `search` once the address is canonical. */
function shown(pathname: string, search = ''): AppState {
  const href = canonicalHref(pathname, search);
  return decodeState(href === null ? search : new URL(href, 'http://h').search);
}

describe('stateOfVendorPath', () => {
  it('maps the project page and its workspace and table', () => {
    for (const p of ['/acme/mnist', '/acme/mnist/', '/acme/mnist/workspace', '/acme/mnist/table', '/acme/mnist/overview',
      '/acme/mnist/runs', '/acme/mnist/groups/', '/acme/mnist/artifacts', '/acme/mnist/artifacts/model']) {
      expect(stateOfVendorPath(p), p).toEqual({ entity: 'acme', project: 'mnist', ...none });
    }
  });

  it('maps a run, and its tabs', () => {
    expect(stateOfVendorPath('/acme/mnist/runs/5exwyk74')).toEqual({ entity: 'acme', project: 'mnist', ...none, run: '5exwyk74' });
    const tab = (t: string) => stateOfVendorPath(`/acme/mnist/runs/r1/${t}`)?.tab;
    expect(tab('overview')).toBe('overview');
    expect(tab('logs')).toBe('logs');
    expect(tab('files')).toBe('overview'); // the files are listed on the overview here
    expect(tab('artifacts')).toBe('artifacts');
    expect(tab('system')).toBe('system');
    expect(tab('workspace')).toBe('charts');
    expect(tab('histograms')).toBe('histograms'); // this app's own tab names too
    expect(tab('ranks')).toBe('ranks');
    expect(tab('code')).toBe('overview');
    expect(tab('no-such-tab')).toBe('overview');
    // A file's path under the files tab.
    expect(stateOfVendorPath('/acme/mnist/runs/r1/files/media/images/x')).toMatchObject({ run: 'r1', tab: 'overview' });
    // No tab segment: the tab is not named (the query's, if any, stays).
    expect(stateOfVendorPath('/acme/mnist/runs/r1')).not.toHaveProperty('tab');
  });

  it('maps a group and an artifact version', () => {
    expect(stateOfVendorPath('/acme/mnist/groups/DDP')).toEqual({ entity: 'acme', project: 'mnist', ...none, group: 'DDP' });
    expect(stateOfVendorPath('/acme/mnist/groups/exp%201/workspace')).toMatchObject({ group: 'exp 1', run: '' });
    expect(stateOfVendorPath('/acme/mnist/artifacts/model/resnet/v3')).toEqual({ entity: 'acme', project: 'mnist', ...none, art: 'resnet', ver: 'v3' });
    expect(stateOfVendorPath('/acme/mnist/artifacts/dataset/mnist-train/latest')).toMatchObject({ art: 'mnist-train', ver: '' });
    expect(stateOfVendorPath('/acme/mnist/artifacts/dataset/mnist-train')).toMatchObject({ art: 'mnist-train', ver: '' });
    expect(stateOfVendorPath('/acme/mnist/artifacts/model/resnet/best/files')).toMatchObject({ art: 'resnet', ver: 'best' });
  });

  it('gives the same page as the query parameters', () => {
    const cases: [string, string][] = [
      ['/acme/mnist', '?p=acme/mnist'],
      ['/acme/mnist/runs/r1', '?p=acme/mnist&run=r1'],
      ['/acme/mnist/runs/r1/logs', '?p=acme/mnist&run=r1&tab=logs'],
      ['/acme/mnist/groups/DDP', '?p=acme/mnist&group=DDP'],
      ['/acme/mnist/artifacts/model/resnet/v3', '?p=acme/mnist&art=resnet&ver=v3'],
    ];
    for (const [path, query] of cases) {
      expect(shown(path), path).toEqual(decodeState(query));
      expect(canonicalHref(path, ''), path).toBe('/' + encodeState(decodeState(query)));
    }
    expect(pageOf(shown('/acme/mnist/runs/r1'))).toBe('run');
    expect(pageOf(shown('/acme/mnist/groups/DDP'))).toBe('group');
    expect(pageOf(shown('/acme/mnist/artifacts/model/resnet/v3'))).toBe('artifact');
    expect(pageOf(shown('/acme/mnist/workspace'))).toBe('workspace');
  });

  it('leaves unknown paths alone', () => {
    for (const p of ['/', '', '/acme', '/acme/', '/acme/mnist/sweeps/abc', '/acme/mnist/reports/x', '/acme/mnist/workspace/extra',
      '/acme/mnist/table/x', '/acme/mnist/runs/bad%2Fid', '/acme/bad%zz', '/bad name/mnist', '/acme/' + 'x'.repeat(65),
      '/acme/mnist/nope', '/index.html']) {
      expect(stateOfVendorPath(p), p).toBeNull();
      expect(canonicalHref(p, '?p=a/b'), p).toBeNull();
    }
  });
});

describe('canonicalHref', () => {
  it('keeps what the query adds, the path deciding the page', () => {
    // A tab in the query stays on a run path without one; the path's tab wins over the query's.
    expect(canonicalHref('/acme/mnist/runs/r1', '?tab=logs&lq=nccl')).toBe('/?p=acme%2Fmnist&run=r1&tab=logs&lq=nccl');
    expect(canonicalHref('/acme/mnist/runs/r1/system', '?tab=logs')).toBe('/?p=acme%2Fmnist&run=r1&tab=system');
    // The path names the page: a run or group of the query does not survive a project path.
    expect(canonicalHref('/acme/mnist', '?p=x/y&run=r9&group=g')).toBe('/?p=acme%2Fmnist');
    // The vendor's own query parameters are dropped; the hash stays.
    expect(canonicalHref('/acme/mnist/workspace', '?nw=nwuserbob&workspace=user-bob', '#top')).toBe('/?p=acme%2Fmnist#top');
  });

  it('keeps a login token for the sign-in to take', () => {
    expect(canonicalHref('/acme/mnist/runs/r1', '?token=abc')).toBe('/?p=acme%2Fmnist&run=r1&token=abc');
  });

  it('is stable: the canonical form is not a vendor path', () => {
    const href = canonicalHref('/acme/mnist/runs/r1/logs', '')!;
    const u = new URL(href, 'http://h');
    expect(canonicalHref(u.pathname, u.search)).toBeNull();
    const s = structuredCloneState(DEFAULT_STATE);
    expect(decodeState(u.search)).toEqual({ ...s, entity: 'acme', project: 'mnist', run: 'r1', tab: 'logs' });
  });
});

describe('adoptVendorPath', () => {
  afterEach(() => vi.unstubAllGlobals());

  function browser(href: string) {
    const calls: string[] = [];
    const loc = new URL(href);
    vi.stubGlobal('location', loc);
    vi.stubGlobal('history', {
      state: null,
      replaceState: (_s: unknown, _t: string, to: string) => { calls.push(to); const n = new URL(to, loc); loc.pathname = n.pathname; loc.search = n.search; loc.hash = n.hash; },
    });
    return calls;
  }

  it('replaces the address of a vendor path with the app\'s form, once', () => {
    const calls = browser('http://host:8787/acme/mnist/runs/5exwyk74');
    adoptVendorPath();
    expect(calls).toEqual(['/?p=acme%2Fmnist&run=5exwyk74']);
    adoptVendorPath();
    expect(calls).toHaveLength(1);
  });

  it('leaves the projects list and unknown paths as they are', () => {
    for (const href of ['http://host:8787/', 'http://host:8787/?p=acme/mnist', 'http://host:8787/acme', 'http://host:8787/acme/mnist/sweeps/x']) {
      const calls = browser(href);
      adoptVendorPath();
      expect(calls, href).toEqual([]);
    }
  });
});
