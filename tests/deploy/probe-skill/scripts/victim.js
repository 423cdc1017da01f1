'use strict';
// The victim of the deploy tests' hostile probe: its environment holds the granted
// CELL_SECRET; it waits (until its timeout, a kill, or the end of its broker) so that a
// run of another connection can try to reach it. Its arguments only mark it for pgrep.
setInterval(() => {}, 1000);
