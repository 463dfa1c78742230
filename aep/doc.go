// Package aep is the Agent Event Protocol vocabulary of the bridge: the event
// envelope and its validation rules, the bridge's envelope hygiene
// (identifying strings of bounded length, without control characters), event
// ids, the totally ordered capture and severity levels, capture down-leveling
// at a hop, the redaction pipeline and its credential vocabulary
// (IsCredentialName), which also decides which form fields are secret.
//
// It sits at the bottom of the bridge's one-way flow (elicit → translate →
// attention → control → aep → bus): every other stage builds events with it,
// and it imports none of them. It is pure: no I/O, no goroutines.
//
// Spec sections implemented here:
//   - AEP-0001 §5 (envelope, extension attributes), §6 (type grammar),
//     §7 (epoch/seq) and §8 (severity, capture, down-leveling);
//   - AEP-0002 §5 (payload shapes and their x-aep-capture levels, the
//     [metadata*] exception fields), with the bridge's field_spec extension
//     members (FieldSpec) gated like the rest;
//   - AEP-0003 §9.2 (metadata synthesis) and §9.4 (the redaction pipeline).
package aep
