"""Public Relay REST API documentation pages (fictional; written for this project, CC0).

The webhook event reference pages (api-0035 to api-0042) share the same opening paragraph, as templated
reference pages do; what distinguishes them comes after the first 60 words."""

from __future__ import annotations

DOCS: list[tuple[str, str, str]] = [
    (
        "api-0001",
        "Authentication overview",
        "The Relay API accepts two kinds of credentials. Secret API keys are simple bearer tokens for "
        "server-to-server integrations: send them in the Authorization header as 'Bearer qs_live_...'. OAuth 2.0 "
        "client credentials are for platforms that act on behalf of several Relay accounts and need scoped, "
        "expiring access tokens. All requests must use HTTPS; plain HTTP requests are rejected with 403. Keys and"
        " tokens belong to one account and one mode, live or test.",
    ),
    (
        "api-0002",
        "Creating and managing API keys",
        "Account owners and admins create API keys in the dashboard under Developers > API keys. Live keys start "
        "with qs_live_ and test keys with qs_test_. The full key is shown only once, at creation; store it in "
        "your secrets manager. You can give each key a label, restrict it to certain IP ranges and limit it to "
        "scopes. Each account can hold up to 50 active keys. Deleting a key takes effect within one minute.",
    ),
    (
        "api-0003",
        "OAuth 2.0 client credentials",
        "Register an OAuth application under Developers > OAuth apps to receive a client_id and client_secret. "
        "Request an access token with POST /oauth/token using grant_type=client_credentials and the scopes you "
        "need. Tokens expire after 3600 seconds; request a new one shortly before expiry rather than waiting for "
        "a 401. Refresh tokens are not issued for this grant. Up to 20 tokens per client can be valid at the same"
        " time.",
    ),
    (
        "api-0004",
        "Authentication errors",
        "A 401 response means the credential was missing, malformed, revoked or expired. The error code field "
        "tells you which: missing_credentials, invalid_key, key_revoked or token_expired. A 403 response means "
        "the credential is valid but lacks a scope, the IP is not on the key's allowlist, or a test key was used "
        "against live data. Repeated 401s from the same IP are throttled for 15 minutes.",
    ),
    (
        "api-0005",
        "Rate limits",
        "Requests are limited per API key using a token bucket. The default allows 600 requests per minute with "
        "bursts of up to 100 requests per second. Every response carries X-RateLimit-Limit, X-RateLimit-Remaining"
        " headers so you can pace yourself. Bulk and export endpoints have their own lower limits listed on their"
        " pages. Limits apply separately to live and test mode. If you consistently need more, contact support "
        "with your account id and expected peak rate before a launch.",
    ),
    (
        "api-0006",
        "API client best practices",
        "Set a descriptive User-Agent with your product name and version so that we can contact you about "
        "problems with your integration. Reuse HTTPS connections instead of opening one per request; keep-alive "
        "lasts 60 seconds. Log the Request-Id header of every response you store, and include it when you contact"
        " support. Pin an API version with the Relay-Version header in production code and upgrade deliberately. "
        "Treat unknown fields and event types as additive and ignore them. Keep secret keys in a secrets manager "
        "and give each service its own restricted key. Prefer webhooks over polling, and the bulk endpoints over "
        "loops of single calls. Use test mode in CI, never live keys. When you receive a 429, do not retry at "
        "once: read the Retry-After header. It gives the number of seconds to wait before the next attempt, after"
        " which your allowance has refilled.",
    ),
    (
        "api-0007",
        "Rate limits by plan",
        "The default limit depends on your plan. Starter: 120 requests per minute and 10 webhook endpoints. "
        "Growth: 600 requests per minute and 20 webhook endpoints. Enterprise: 3,000 requests per minute by "
        "default and up to 10,000 on request, with dedicated capacity available. Limits are per API key, so "
        "splitting traffic across keys of the same account does not raise the total allowance, which is capped at"
        " twice the per-key limit.",
    ),
    (
        "api-0008",
        "Pagination",
        "List endpoints return pages of objects with cursor-based pagination. Use limit to set the page size (1 "
        "to 100, default 25). Each response contains has_more and, when it is true, pass the id of the last "
        "object as starting_after to get the next page, or ending_before to go backwards. Cursors are stable "
        "while new objects are added. Results are ordered by creation time, newest first.",
    ),
    (
        "api-0009",
        "Legacy v2 pagination",
        "Endpoints of the v2 API use page-based pagination with page and per_page parameters (per_page up to "
        "200). Responses include total_count and a Link header with next and prev URLs. Deep pages are slow and "
        "may return 504 beyond page 500; the v3 cursor pagination does not have this limit. v2 pagination is "
        "frozen and will be removed with v2. New integrations should not use v2 at all; the v3 list endpoints "
        "return the same objects with stable cursors and are faster on large accounts.",
    ),
    (
        "api-0010",
        "Webhooks overview",
        "Webhooks push events to your server when something happens in Relay, for example when a shipment is "
        "picked up or delivered, so you do not need to poll. Register an HTTPS endpoint and choose which event "
        "types to receive. Each delivery is a POST with a JSON body containing the event id, type, created "
        "timestamp and the data object. Respond with any 2xx status within 10 seconds to acknowledge it.",
    ),
    (
        "api-0011",
        "Verifying webhook signatures",
        "Every webhook request carries a Relay-Signature header with a timestamp t and an HMAC-SHA256 signature "
        "v1 computed over t, a dot and the raw request body, using your endpoint's signing secret. Compute the "
        "same HMAC and compare in constant time. Reject events whose timestamp is more than 300 seconds old to "
        "prevent replays. When you use our SDK's verify helper, a stale timestamp raises error RLY-4291 and a "
        "wrong secret raises RLY-4290. Rotating the signing secret keeps the old one valid for 24 hours.",
    ),
    (
        "api-0012",
        "Webhook retries and duplicate deliveries",
        "Relay delivers webhooks at least once. If your endpoint does not answer with a 2xx status within 10 "
        "seconds, the delivery counts as failed and we retry with exponential backoff, up to 16 times over 72 "
        "hours. Because of retries and network timeouts you may receive the same event more than once; make your "
        "handler idempotent by storing the ids of processed events and skipping repeats. Answer quickly and do "
        "the work in a background job, so slow processing does not cause retries. Relay does not guarantee "
        "ordering: a shipment.delivered event can arrive before shipment.out_for_delivery. Compare the created "
        "timestamps, or fetch the current state of the object, instead of relying on arrival order.",
    ),
    (
        "api-0013",
        "Webhook event types",
        "Available event types: shipment.created, shipment.picked_up, shipment.in_transit, "
        "shipment.out_for_delivery, shipment.delivered, shipment.exception, shipment.returned, tracking.updated "
        "and account.usage_threshold. Subscribe to a wildcard such as shipment.* to get all shipment events. New "
        "event types are added without a version change, so ignore types you do not recognise. Each event carries"
        " the full shipment object in its data field unless the endpoint uses thin payloads. The "
        "account.usage_threshold event fires at 80 and 100 percent of the plan allowance.",
    ),
    (
        "api-0014",
        "Managing webhook endpoints",
        "You can register webhook endpoints in the dashboard or with POST /v3/webhook_endpoints. Each endpoint "
        "has a URL, a list of event types, a description, an API version and a signing secret. Endpoints can be "
        "updated or deleted at any time, and a test event can be sent from the dashboard to check that your "
        "server answers. The endpoint page shows the delivery attempts of the last 30 days with the response code"
        " and body your server returned. If an endpoint keeps failing for three days, Relay disables it and "
        "emails the account owners. Re-enable it in the dashboard with the Enable button after fixing the "
        "problem, then replay the missed events from the event log.",
    ),
    (
        "api-0015",
        "Webhook source IP addresses",
        "If your firewall only accepts known senders, allow the webhook source ranges 185.63.124.0/26 and "
        "2a05:d018:9b0::/48. The current list is also published as JSON at https://api.quaystone.example/ips.json"
        " and changes are announced 30 days ahead in the changelog. IP allowlisting is not a substitute for "
        "verifying the signature. Webhooks are always sent from these ranges in both live and test mode. If you "
        "use a proxy or a web application firewall in front of your endpoint, make sure it passes the "
        "Relay-Signature header through unchanged.",
    ),
    (
        "api-0016",
        "Testing webhooks locally",
        "Use the Relay CLI to receive webhooks on your laptop without exposing a public URL. Run 'relay login', "
        "then 'relay listen --forward-to localhost:3000/hooks'. The CLI prints a temporary signing secret to use "
        "in your handler. Trigger sample events with 'relay trigger shipment.delivered'. In test mode you can "
        "also create shipments that advance through all states in a few minutes. The CLI is available through "
        "Homebrew, as a Debian package and as a single binary for Windows. Forwarded events carry real "
        "signatures, so your verification code can be tested end to end.",
    ),
    (
        "api-0017",
        "Errors",
        "Relay uses conventional HTTP status codes. 400: the request is malformed. 404: the object does not exist"
        " or belongs to another account. 409: conflict, for example an idempotency key reused with a different "
        "body. 422: validation failed; the errors array lists each invalid field. 429: too many requests. 5xx: a "
        "problem on our side. Error bodies contain type, code, message and request_id; quote the request_id when "
        "you contact support.",
    ),
    (
        "api-0018",
        "Idempotent requests",
        "To safely retry POST requests, send an Idempotency-Key header with a unique value such as a UUID. If the"
        " same key is sent again within 24 hours, Relay returns the saved response of the first request instead "
        "of creating a second object. Reusing a key with a different request body returns 409. GET and DELETE "
        "requests are idempotent by nature and ignore the header.",
    ),
    (
        "api-0019",
        "API versions",
        "Relay uses dated API versions such as 2024-06-01. Your account has a default version set when you make "
        "your first request; override it per request with the Relay-Version header. Backwards-incompatible "
        "changes only ship in new versions, while additive changes such as new fields or event types can appear "
        "at any time. Upgrade in the dashboard after testing with the header. The changelog lists every version "
        "with its breaking changes. Versions are supported for at least 24 months after a newer one ships.",
    ),
    (
        "api-0020",
        "v2 API deprecation",
        "The v2 API is deprecated and will be switched off on 31 December 2025. From 1 October 2025, v2 requests "
        "receive a Sunset header and the warning code RLY-2099 in the response body. Main differences in v3: "
        "cursor pagination, dated versions, signed webhooks and consistent error objects. The migration guide "
        "maps every v2 endpoint to its v3 equivalent. Accounts still calling v2 are contacted by their account "
        "manager. Test mode already rejects v2 calls so you can check your migration.",
    ),
    (
        "api-0021",
        "Official SDKs",
        "We maintain SDKs for Python (relay-python), Node.js (@quaystone/relay) and Go "
        "(github.com/quaystone/relay-go). They handle authentication, retries with backoff, pagination helpers "
        "and webhook signature verification. Each SDK release is pinned to an API version. Community libraries "
        "for other languages exist but are not supported by Quaystone. Install them with pip install "
        "relay-python, npm install @quaystone/relay or go get. Report SDK bugs as issues in the public "
        "repositories.",
    ),
    (
        "api-0022",
        "Test mode",
        "Every account has a test mode with its own API keys (qs_test_), data and webhook endpoints. Test "
        "shipments move through simulated carrier events: use tracking numbers starting with TEST-DLV to simulate"
        " delivery and TEST-EXC to simulate an exception. Test mode is free and does not count toward your event "
        "quota. Data in test mode is deleted after 90 days. Switch between live and test mode with the toggle at "
        "the top of the dashboard. Test keys never touch live data, and live keys cannot create test shipments.",
    ),
    (
        "api-0023",
        "Creating shipments",
        "Create a shipment with POST /v3/shipments, giving the carrier code, tracking number and optional "
        "reference and metadata. Relay validates the tracking number format for the carrier and starts polling "
        "the carrier within a minute. The response contains the shipment id and status pending. Up to 40 metadata"
        " keys of 500 characters each can be stored and are returned in webhooks. Creating the same tracking "
        "number twice for the same carrier returns the existing shipment instead of a duplicate.",
    ),
    (
        "api-0024",
        "Tracking events",
        "GET /v3/shipments/{id}/events returns the normalised tracking events of a shipment, newest first, with "
        "location, status code, carrier description and timestamp. The endpoint is paginated like all lists. Each"
        " event also carries the raw carrier status code so you can map carrier-specific details yourself. Use "
        "the tracking.updated webhook instead of polling this endpoint. Events are kept for 13 months after "
        "delivery. Older events are removed, and only the final status remains on the shipment.",
    ),
    (
        "api-0025",
        "Filtering lists",
        "List endpoints accept filters as query parameters: status, carrier, created[gte] and created[lt] for "
        "date ranges, and metadata[key]=value for your own metadata. Combine filters with AND semantics. "
        "Full-text search over references is available on GET /v3/shipments/search with the q parameter and is "
        "eventually consistent, usually within a few seconds. Filters can be combined with pagination: the cursor"
        " remembers the filter set. Unknown filter names return a 400 error rather than being ignored, so typos "
        "are caught early.",
    ),
    (
        "api-0026",
        "Bulk import",
        "To create many shipments at once, upload a CSV file to POST /v3/imports. Files can hold up to 50,000 "
        "rows and 20 MB. The import runs asynchronously; poll the import object or listen for import.completed. "
        "Rows that fail validation are listed in an error report you can download. Bulk imports have a limit of "
        "10 concurrent imports per account. The CSV needs a header row with at least carrier and tracking_number "
        "columns; other columns become metadata. Imported shipments count toward your event quota like any other.",
    ),
    (
        "api-0027",
        "API status and uptime",
        "Live status of the Relay API, dashboard and webhook delivery is published at status.quaystone.example, "
        "where you can subscribe to updates by email or RSS. Planned maintenance is announced at least seven days"
        " ahead. Our uptime commitment for paid plans is described in the service level agreement. Incidents "
        "affecting the API are posted within 15 minutes of detection, followed by a root cause summary within "
        "five working days for major incidents. Historical uptime for the last 90 days is shown per component.",
    ),
    (
        "api-0028",
        "Restricted keys and scopes",
        "Restricted keys only have the scopes you choose, for example shipments:read or webhooks:write. Use them "
        "for services that need limited access, such as a reporting job that should only read. A request that "
        "needs a scope the key lacks returns 403 with code missing_scope and the name of the required scope. "
        "Create restricted keys in the dashboard under Developers > API keys > Create restricted key. Scopes "
        "cannot be changed after creation; create a new key instead and delete the old one.",
    ),
    (
        "api-0029",
        "Rotating API keys",
        "Rotate keys regularly and immediately if one may have leaked. In the dashboard, choose Roll key: a new "
        "key is created and the old one stays valid for the overlap period you choose, up to 7 days, so you can "
        "deploy the new key without downtime. If a key was exposed publicly, roll it with no overlap. We "
        "automatically revoke keys that we detect in public code repositories.",
    ),
    (
        "api-0030",
        "Using Relay from a browser",
        "Never put secret keys in browser or mobile code. For client-side tracking widgets, use a publishable key"
        " (qs_pub_), which can only read tracking status for shipments marked public. CORS is enabled only for "
        "publishable keys and the origins you list in the dashboard; secret-key requests from browsers are "
        "rejected. Publishable keys are safe to expose and cannot create, update or delete objects. Rate limits "
        "for publishable keys are counted per visitor IP address, 60 requests per minute.",
    ),
    (
        "api-0031",
        "Timeouts and request limits",
        "Requests time out after 30 seconds; long operations such as imports are asynchronous. Request bodies are"
        " limited to 1 MB and URLs to 8 KB. Responses larger than 10 MB are not produced; use pagination or "
        "exports instead. Connections are kept alive for 60 seconds. Clients should set their own timeout "
        "slightly above 30 seconds and treat a timeout on a POST as unknown state: retry with the same "
        "idempotency key.",
    ),
    (
        "api-0032",
        "Thin and snapshot webhook payloads",
        "Webhook endpoints can receive snapshot payloads, which contain the full object at the time of the event,"
        " or thin payloads, which contain only the object id and the changed fields. Thin payloads are smaller "
        "and never stale because you fetch the current object, at the cost of one extra API call. Pick the "
        "payload style per endpoint in the dashboard. Thin payloads are recommended for new integrations and "
        "become the default in the next API version.",
    ),
    (
        "api-0033",
        "Server errors and request IDs",
        "A 500, 502, 503 or 504 response means something went wrong at Relay. These errors are safe to retry with"
        " backoff for GET requests and for POST requests with an idempotency key. Each response includes a "
        "Request-Id header such as req_8fK2; include it in support requests so we can find the logs. Persistent "
        "5xx errors are shown on the status page. For 503 responses during planned maintenance, the Retry-After "
        "header says when to come back.",
    ),
    (
        "api-0035",
        "Webhook event reference: shipment.created",
        "This page is part of the webhook event reference. Every event is delivered as an HTTPS POST request to "
        "each endpoint subscribed to its type, signed with the Relay-Signature header, and retried for up to 72 "
        "hours until your endpoint answers with a 2xx status. The body is a JSON envelope with the fields id, "
        "type, created, api_version and data, where data holds the shipment object rendered in the API version of"
        " your endpoint. When it fires: as soon as a shipment is created through the API, a bulk import or the "
        "dashboard, before the carrier has been contacted. Typical use: store the Relay shipment id next to your "
        "own order number. Notes: the status is always pending at this point, and tracking data is empty.",
    ),
    (
        "api-0036",
        "Webhook event reference: shipment.picked_up",
        "This page is part of the webhook event reference. Every event is delivered as an HTTPS POST request to "
        "each endpoint subscribed to its type, signed with the Relay-Signature header, and retried for up to 72 "
        "hours until your endpoint answers with a 2xx status. The body is a JSON envelope with the fields id, "
        "type, created, api_version and data, where data holds the shipment object rendered in the API version of"
        " your endpoint. When it fires: when the carrier reports the first physical scan of the parcel, usually "
        "at collection from your warehouse or at drop-off in a depot. Typical use: tell the buyer that the order "
        "has left. Notes: some carriers send this scan hours after the actual collection.",
    ),
    (
        "api-0037",
        "Webhook event reference: shipment.in_transit",
        "This page is part of the webhook event reference. Every event is delivered as an HTTPS POST request to "
        "each endpoint subscribed to its type, signed with the Relay-Signature header, and retried for up to 72 "
        "hours until your endpoint answers with a 2xx status. The body is a JSON envelope with the fields id, "
        "type, created, api_version and data, where data holds the shipment object rendered in the API version of"
        " your endpoint. When it fires: each time the parcel is scanned between hubs or crosses a border. Typical"
        " use: update an estimated delivery date in your shop. Notes: there can be dozens of these per shipment, "
        "so subscribe only if you need them.",
    ),
    (
        "api-0038",
        "Webhook event reference: shipment.out_for_delivery",
        "This page is part of the webhook event reference. Every event is delivered as an HTTPS POST request to "
        "each endpoint subscribed to its type, signed with the Relay-Signature header, and retried for up to 72 "
        "hours until your endpoint answers with a 2xx status. The body is a JSON envelope with the fields id, "
        "type, created, api_version and data, where data holds the shipment object rendered in the API version of"
        " your endpoint. When it fires: when the parcel is loaded onto the vehicle for the final round, usually "
        "on the morning of the delivery day. Typical use: send the buyer an arriving-today message. Notes: not "
        "every carrier reports this step.",
    ),
    (
        "api-0039",
        "Webhook event reference: shipment.delivered",
        "This page is part of the webhook event reference. Every event is delivered as an HTTPS POST request to "
        "each endpoint subscribed to its type, signed with the Relay-Signature header, and retried for up to 72 "
        "hours until your endpoint answers with a 2xx status. The body is a JSON envelope with the fields id, "
        "type, created, api_version and data, where data holds the shipment object rendered in the API version of"
        " your endpoint. When it fires: when the carrier confirms delivery to the recipient, a neighbour, a safe "
        "place or a parcel locker. Typical use: close the order and start the return window. Notes: proof of "
        "delivery, when the carrier provides it, is in data.proof.",
    ),
    (
        "api-0040",
        "Webhook event reference: shipment.exception",
        "This page is part of the webhook event reference. Every event is delivered as an HTTPS POST request to "
        "each endpoint subscribed to its type, signed with the Relay-Signature header, and retried for up to 72 "
        "hours until your endpoint answers with a 2xx status. The body is a JSON envelope with the fields id, "
        "type, created, api_version and data, where data holds the shipment object rendered in the API version of"
        " your endpoint. When it fires: when a delivery attempt fails or the parcel is held: nobody at home, an "
        "address problem, a customs hold, damage or a refused parcel. Typical use: contact the buyer or open a "
        "claim with the carrier. Notes: data.exception_code says which of the 14 exception reasons applies.",
    ),
    (
        "api-0041",
        "Webhook event reference: shipment.returned",
        "This page is part of the webhook event reference. Every event is delivered as an HTTPS POST request to "
        "each endpoint subscribed to its type, signed with the Relay-Signature header, and retried for up to 72 "
        "hours until your endpoint answers with a 2xx status. The body is a JSON envelope with the fields id, "
        "type, created, api_version and data, where data holds the shipment object rendered in the API version of"
        " your endpoint. When it fires: when the carrier confirms that the parcel is on its way back to the "
        "sender, or has arrived back. Typical use: start your refund process. Notes: a returned shipment can no "
        "longer change status.",
    ),
    (
        "api-0042",
        "Webhook event reference: tracking.updated",
        "This page is part of the webhook event reference. Every event is delivered as an HTTPS POST request to "
        "each endpoint subscribed to its type, signed with the Relay-Signature header, and retried for up to 72 "
        "hours until your endpoint answers with a 2xx status. The body is a JSON envelope with the fields id, "
        "type, created, api_version and data, where data holds the shipment object rendered in the API version of"
        " your endpoint. When it fires: whenever any tracking field changes, including corrections of earlier "
        "events by the carrier. Typical use: keep a full copy of the tracking history in your own database. "
        "Notes: this is the noisiest event type, so batch your processing.",
    ),
]
