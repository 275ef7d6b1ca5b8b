import { render } from 'preact';
import './styles.css';
import { App } from './App';
import { adoptVendorPath } from './lib/nav';

// A W&B page path (what its clients print, "View run at ...") becomes this app's URL at once,
// before the sign-in screen, so that signing in lands on that page.
adoptVendorPath();

render(<App />, document.getElementById('app')!);
