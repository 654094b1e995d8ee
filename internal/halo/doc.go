// Package halo computes the geometry and communication plans of a halo
// (ghost-cell) exchange on an N-dimensional Cartesian process grid, after
// ADCL (Gabriel & Huang, "Runtime Optimization of Application Level
// Communication Patterns"). Every rank owns an array of interior cells
// framed by a halo Width cells deep on every side; an exchange fills each
// halo cell from the interior of the neighbour that owns that cell.
//
// Plans are data: which box of the array goes to which neighbour under
// which tag, and which box is filled from whom, phase by phase. The package
// does no I/O, so Simulate runs the plans of every rank of a grid in memory
// and tests check them exhaustively; an executor elsewhere carries them out
// over point-to-point messages.
//
// Two geometries fill the same halo, and which one is faster depends on the
// machine, the network and the message sizes, so a tuner times both:
//
//   - all-at-once (PlanAll): one phase with a message to every neighbour,
//     edges and corners included — 3^N−1 partners in flight at once, many
//     of them tiny corner messages, but no waiting between phases;
//   - dimension-ordered (PlanPhased): N phases, phase d talking only to the
//     two neighbours along dimension d — 2 partners at a time, and edges
//     and corners travel as part of the larger face messages because each
//     phase sends the halos the earlier phases filled (and only those: not
//     the halo past an open border, which no phase fills), at the cost of
//     N dependent rounds.
package halo
