import { useEffect, useState } from 'preact/hooks';

/**
 * Hash routing: `#/tasks/12/alarms?level=3`. The hash never reaches the server, and it holds only ids
 * and filters (never a credential of the console). One exception passes through: `#/claim?t=`, where
 * a group claim link sends a person to sign in, with the link's own token, and which leaves at once
 * for the link's page (app.tsx).
 */
export interface Route {
  /** Path segments: `['tasks', '12', 'alarms']`. */
  parts: string[];
  query: URLSearchParams;
}

/** A path segment decoded; a malformed escape (`%E0%A4%A`) stays as typed (it then names no page). */
function decodeSafely(segment: string): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    return segment;
  }
}

export function parseHash(hash: string): Route {
  const text = hash.replace(/^#\/?/, '');
  const [path, search = ''] = text.split('?', 2);
  return {
    parts: path.split('/').filter(Boolean).map(decodeSafely),
    query: new URLSearchParams(search),
  };
}

export function useRoute(): Route {
  const [hash, setHash] = useState(location.hash);
  useEffect(() => {
    const onChange = () => setHash(location.hash);
    window.addEventListener('hashchange', onChange);
    return () => window.removeEventListener('hashchange', onChange);
  }, []);
  return parseHash(hash);
}

/** A link target: `href('tasks', 12, 'alarms', {level: 3})` -> `#/tasks/12/alarms?level=3`. */
export function href(...parts: (string | number | Record<string, string | number | undefined>)[]): string {
  const last = parts[parts.length - 1];
  const query = typeof last === 'object' ? last : undefined;
  const path = (query ? parts.slice(0, -1) : parts).map((p) => encodeURIComponent(String(p))).join('/');
  const qs = new URLSearchParams();
  for (const [k, v] of Object.entries(query ?? {})) if (v !== undefined && v !== '') qs.set(k, String(v));
  const search = qs.toString();
  return `#/${path}${search ? `?${search}` : ''}`;
}

export function navigate(target: string): void {
  location.hash = target.replace(/^#/, '');
}
