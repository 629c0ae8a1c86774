import { render } from 'preact';
import { App } from './app.tsx';
import './console.css';
import './views.css';

/** The tocsin web console (built into one HTML page by scripts/build-console.ts). */
const root = document.getElementById('app');
if (root) {
  root.textContent = '';
  render(<App />, root);
}
