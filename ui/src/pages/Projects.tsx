import { api, type Viewer } from '../lib/api';
import { fmtAgo } from '../lib/format';
import { encodeState, DEFAULT_STATE } from '../lib/url';
import { Empty, ErrorBox, Link, Loading, useLoad } from '../components/common';

export function ProjectsPage({ viewer }: { viewer: Viewer }) {
  const { data, error, reload } = useLoad(() => api.projects(), [], 10000);
  return (
    <div class="page">
      <h1>Projects of {viewer.entity}</h1>
      {error ? <ErrorBox error={error} retry={reload} />
        : !data ? <Loading what="projects" />
          : !data.length ? <Empty>No projects yet. A run logged with <code>cohort.init(project="…")</code> creates one.</Empty>
            : (
              <table class="table projects">
                <thead><tr><th>Project</th><th class="num">Runs</th><th>Last update</th></tr></thead>
                <tbody>
                  {data.map((p) => (
                    <tr key={p.entity + '/' + p.project}>
                      <td><Link href={'/' + encodeState({ ...DEFAULT_STATE, entity: p.entity, project: p.project })}>{p.project}</Link></td>
                      <td class="num">{p.runs}</td>
                      <td>{fmtAgo(p.updated_ms)}</td>
                    </tr>
                  ))}
                </tbody>
              </table>
            )}
    </div>
  );
}
