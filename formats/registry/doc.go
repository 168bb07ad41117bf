// Package registry fetches schemas from a Confluent-compatible schema
// registry (Confluent, Redpanda, Apicurio's ccompat API, Karapace) through
// franz-go's pkg/sr, with the cache and retry policy that pkg/sr leaves to
// its user.
//
// Lifecycle: New checks the configuration and returns a Client; ByID and
// ByGUID may then be called from any number of goroutines. A Client holds
// no goroutines and needs no Close.
//
// Invariants:
//
//  1. Schemas are cached per id (and per GUID), never per subject or record
//     name: an id names one immutable schema, while a name's schema evolves.
//     A cached schema is served forever without asking the registry again.
//  2. Concurrent first sightings of one id make one fetch (the others wait
//     for it).
//  3. A 404 (unknown id, or a reference to a missing subject version) is the
//     record's fault: it returns a *NotFoundError (errors.Is ErrNotFound)
//     and is cached negatively for Config.NotFoundTTL, so a topic of unknown
//     ids does not hammer the registry. Expired 404s are swept (amortized
//     O(1) each), so ever new unknown ids keep about one TTL's worth cached.
//  4. A 401 or 403 (credentials missing, wrong or not allowed) is the
//     configuration's fault: it returns at once, unretried and uncached, a
//     *AuthError (errors.Is ErrAuth) marked retry.Fatal, which names
//     Config.Setting and the status: the caller stops rather than hold
//     records forever. Ping returns it too.
//  5. Anything else that goes wrong talking to the registry (unreachable,
//     5xx, 429, a malformed answer) is retried under
//     Config.Retry, rotating through the URLs; when the policy gives up it
//     returns an *UnavailableError (errors.Is ErrUnavailable, and marked
//     retry.Retryable, so retry.IsRetryable is true), which is never cached: the caller holds the record and asks again later. When
//     the caller's context ends first, the context's error is returned.
//  6. Credentials never appear in String, GoString or any error: URL
//     userinfo is moved into basic auth, and error texts are scrubbed of
//     the password and the token.
//  7. A Schema carries its references resolved transitively, dependencies
//     before dependents, each once; reference cycles and chains deeper than
//     MaxReferenceDepth are refused as not found. Protobuf imports of
//     google/protobuf/*, google/type/* and confluent/* are never fetched
//     (Confluent's serializers never register them; the decoder has them
//     built in).
package registry
