"""Queries, judgements and the situation each query was written to plant (written for this project, CC0).

Each entry: (query_id, text, area, style, {doc_id: relevance}, planted situations).
relevance 2 = answers the question, 1 = partially relevant / useful context.
"style" is "user-words" when the query is phrased the way an employee would type it (own words, no
internal jargon), "jargon" when it uses the documents' own vocabulary, tool names or identifiers.
"""

from __future__ import annotations

# One query a line: id | area | style | judgements (document=relevance, space-separated) | planted situations
# (space-separated, empty for none) | the text, to the end of the line. Lines starting with # are comments.
TABLE = """
id   | area | style      | judgements              | planted          | text
# --- ordinary questions (most of these should be answered in the top 10) ---
q001 | hr   | user-words | hr-0001=2               |                  | how many days of annual leave do I get in Germany
q002 | sec  | jargon     | sec-0001=2              |                  | set up MFA for my Keystone account
q003 | sec  | jargon     | sec-0003=2 it-0008=1    |                  | what are the incident severity levels SEV1 to SEV4
q004 | api  | jargon     | api-0002=2 api-0001=1   |                  | how to create an API key
q005 | api  | jargon     | api-0017=2              |                  | what does a 422 status mean in the Relay API
q006 | api  | jargon     | api-0008=2              |                  | cursor pagination with starting_after and has_more
q007 | sec  | user-words | sec-0006=2              |                  | how often do we do access reviews
q008 | hr   | user-words | hr-0016=2               |                  | how long is the probation period
q009 | hr   | user-words | hr-0023=2               |                  | what happens to unused learning budget at the end of the year
q010 | it   | user-words | it-0013=2               |                  | how do I print something in the office
q011 | it   | user-words | it-0019=2               |                  | the meeting room screen is black and zoom won't start
q012 | bill | user-words | bill-0001=2 bill-0002=1 |                  | what plans does Relay have and what do they cost
q013 | bill | user-words | bill-0013=2             |                  | how do I escalate a customer ticket to engineering
q014 | bill | jargon     | bill-0007=2             |                  | do we charge VAT to business customers in other EU countries
q015 | it   | jargon     | it-0011=2 it-0024=1     |                  | Postgres primary failover with Patroni
q016 | it   | jargon     | it-0012=2               |                  | Kafka consumer lag alert on relay-ingest
q017 | api  | jargon     | api-0018=2 api-0033=1   |                  | how do idempotency keys work for retrying POST requests
q018 | api  | jargon     | api-0013=2              |                  | list of all webhook event types
q019 | hr   | jargon     | hr-0022=2               |                  | what is the 401k match
q020 | hr   | user-words | hr-0020=2 hr-0021=1     |                  | how do performance reviews and ratings work
q021 | hr   | user-words | hr-0026=2               |                  | time off when a family member dies
q022 | it   | user-words | it-0021=2 sec-0004=1    |                  | I left my work phone on the train
q023 | sec  | user-words | sec-0011=2              |                  | where should the team keep shared passwords
q024 | sec  | user-words | sec-0012=2 api-0029=1   |                  | I accidentally pushed an API key to GitHub
q025 | sec  | jargon     | sec-0013=2              |                  | deadline for fixing a critical vulnerability
q026 | api  | jargon     | api-0016=2              |                  | test webhooks on localhost with the CLI
q027 | bill | user-words | bill-0008=2             |                  | customer wants to upgrade to a bigger plan in the middle of the month
q028 | bill | user-words | bill-0010=2             |                  | what if our customer needs a purchase order number on the invoice
q029 | bill | user-words | bill-0019=2             |                  | how fast do we pay supplier invoices
q030 | bill | user-words | bill-0029=2             |                  | customer disputed a card payment with their bank
q031 | it   | jargon     | it-0029=2 it-0025=1     |                  | can I deploy during the end of quarter freeze
q032 | it   | jargon     | it-0030=2               |                  | postmortem template and when it is due
q033 | sec  | user-words | sec-0007=2              |                  | how do I get access to a system I need for my job
q034 | api  | jargon     | api-0019=2              |                  | pin the API version for a single request
q035 | api  | user-words | api-0020=2 api-0009=1   |                  | when will the old v2 API be turned off
q036 | hr   | user-words | hr-0032=2               |                  | I got called for jury service
q037 | hr   | user-words | hr-0007=2               | near-miss        | when do I get paid my expenses
q038 | bill | user-words | bill-0030=2             |                  | who has to approve a purchase over 5000 euros
q039 | bill | user-words | bill-0011=2 bill-0012=1 |                  | how fast does support have to answer enterprise customers
# --- vocabulary mismatch, user words vs the documents' jargon ---
q040 | sec  | user-words | sec-0002=2 it-0014=1    | vocab-user       | I forgot my password and the 2-step code thing
q041 | it   | user-words | it-0003=2               | vocab-user       | my laptop wont connect to the office wifi
q042 | hr   | user-words | hr-0005=2 hr-0004=1     | vocab-user       | how many days off do I get when my kid is born
q043 | it   | user-words | it-0006=2               | vocab-user       | internet is super slow at home whenever the work connection thing is on
q044 | it   | user-words | it-0032=2               | vocab-user       | my computer keeps nagging me to restart
q045 | hr   | user-words | hr-0003=2               | vocab-user       | feeling unwell and won't make it in tomorrow
q046 | api  | user-words | api-0011=2              | vocab-user       | how can I be sure the messages you post to my server really come from you
q047 | it   | user-words | it-0015=2               | vocab-user       | need to install an app but it asks for an admin password
q048 | sec  | user-words | sec-0002=2              | vocab-user       | got a new phone and now I can't log in
# --- vocabulary mismatch the other way: rare identifiers only a lexical index knows ---
q049 | api  | jargon     | api-0011=2              | vocab-lexical    | what does RLY-4291 mean
q050 | hr   | jargon     | hr-0005=2               | vocab-lexical    | does Elternzeit still apply
q051 | bill | jargon     | bill-0015=2             | vocab-lexical    | what does CMR mean
q052 | sec  | jargon     | sec-0005=2              | vocab-lexical    | what does Hook do
q053 | it   | jargon     | it-0004=2               | vocab-lexical    | what is ams-1
q054 | hr   | jargon     | hr-0007=2               | vocab-lexical    | Tally keeps flagging TL-22
q055 | api  | jargon     | api-0011=2              | vocab-lexical    | seeing RLY-4290 in our logs
q056 | api  | jargon     | api-0020=2              | vocab-lexical    | getting RLY-2099 in responses
# --- semantic gap: no shared words and far apart for a general-purpose embedding model ---
q057 | hr   | user-words | hr-0018=2               | semantic-gap     | can I go stay at my parents' place in Portugal for a month and keep doing my job from there
q058 | it   | user-words | it-0024=2               | semantic-gap     | are we doing the pretend-the-servers-blew-up exercise again this year
q059 | bill | user-words | bill-0004=2             | semantic-gap     | a client's card bounced, when do we cut them off
q060 | sec  | user-words | sec-0009=2              | semantic-gap     | how long do we hang on to a client's stuff after they stop paying us
q061 | bill | user-words | bill-0015=2             | semantic-gap     | a customer wants to leave, can I offer them a deal to stay
q062 | sec  | user-words | sec-0022=2              | semantic-gap     | who makes sure we have proof ready for the auditors
# --- several very similar pages compete (regional policies, webhook pages) ---
q063 | hr   | user-words | hr-0010=2               | competing-pages  | what's the nightly hotel limit in Munich
q064 | hr   | user-words | hr-0007=2               | competing-pages  | do I need to keep the receipt for a coffee
q065 | api  | user-words | api-0014=2              | competing-pages  | our webhook endpoint was switched off, how do we turn it back on
q066 | bill | user-words | bill-0005=2             | competing-pages  | can we get our money back if we cancel the yearly plan after two months
q067 | api  | user-words | api-0007=2 api-0005=1   | competing-pages  | what's the request limit on the Starter plan
q068 | api  | user-words | api-0024=2              | competing-pages  | can I still get the scan history of a parcel delivered last year
q069 | hr   | user-words | hr-0001=2               | competing-pages  | until when can I use holiday days carried over from last year
q070 | it   | user-words | it-0028=2               | competing-pages  | the staging data is a week old
q071 | hr   | user-words | hr-0008=2               | competing-pages  | how do I get paid for driving my own car to a client in the UK
q072 | api  | user-words | api-0012=2              | competing-pages  | webhook deliveries arrive in the wrong order
# --- label gap: the judged page has an unjudged near-duplicate (archived or copied page) ---
q073 | hr   | user-words | hr-0002=2               | label-gap        | how many days of holiday are still available to me
q074 | api  | user-words | api-0006=2              | label-gap        | we got a 429, when can we send requests again
q075 | it   | user-words | it-0035=2               | truncated-answer | what's the wifi password for visitors
q076 | it   | user-words | it-0037=2               | label-gap        | who do I hand my on-call shift to and when
q077 | hr   | user-words | hr-0035=2               | label-gap        | can I claim my home internet costs in Tally
# --- pages that live in another area's part of the index ---
q078 | hr   | user-words | hr-0027=2               | cross-area       | is there money for a desk chair for working from home
q079 | hr   | user-words | hr-0031=2               | cross-area       | do I get time back after being paged at night
q080 | sec  | user-words | sec-0010=2              | cross-area       | laptop asks for a recovery key after the update
q081 | bill | user-words | bill-0021=2 sec-0009=1  | cross-area       | a customer asked us to delete all their data
q082 | bill | user-words | bill-0028=2             | cross-area       | who handles P1 customer tickets on a Sunday
q083 | sec  | user-words | sec-0017=2 hr-0012=1    | cross-area       | can I take my laptop on a trip to a high-risk country
# --- two identical queries whose judgements disagree ---
q084 | it   | user-words | it-0001=2               | duplicate-query  | how do I get a new laptop
q085 | it   | user-words | it-0002=2               | duplicate-query  | how do I get a new laptop
# --- questions the hub pages genuinely answer ---
q086 | gen  | user-words | gen-0001=2 it-0023=1    |                  | which Slack channel do I ask IT questions in
q087 | gen  | jargon     | gen-0002=2 it-0016=1    |                  | what is Mooring
# --- more planted cases ---
q088 | bill | user-words | bill-0033=2             | label-gap        | customer is upset about our mistake, can I give them a credit
q089 | api  | user-words | api-0042=2              | near-miss        | which event should I batch because it's so noisy
q090 | api  | user-words | api-0036=2              | near-miss        | which event do some carriers send hours late
q091 | api  | user-words | api-0037=2              | near-miss        | which event can come in dozens of times for one parcel
q092 | api  | user-words | api-0039=2              | near-miss        | where do I find the proof of delivery photo
q093 | it   | user-words | it-0027=2               | near-miss        | the API got slow and the database suddenly gets way more reads
q094 | it   | user-words | it-0039=2               | near-miss        | the dashboard is showing old data
q095 | it   | user-words | it-0040=2               | near-miss        | one carrier's parcels stopped getting tracking updates
q096 | it   | jargon     | it-0041=2               | near-miss        | a pod keeps restarting with exit code 137
q097 | it   | user-words | it-0002=2               | semantic-gap     | do we get a new laptop automatically after a few years
q098 | hr   | user-words | hr-0031=2               | semantic-gap     | what do I get paid for carrying the pager
q099 | sec  | user-words | sec-0006=2              | vocab-user       | we need to show nobody has access they should not have
q100 | api  | user-words | api-0040=2              | near-miss        | how many different failure reasons can the carrier give
# --- ordinary questions that the production run happens to miss ---
q101 | hr   | user-words | hr-0007=2               |                  | how long do I have to submit a receipt
q102 | bill | user-words | bill-0006=2             |                  | what do customers get if the API is down for hours
q103 | it   | user-words | it-0011=2               |                  | what happens if the primary database dies at night
q104 | sec  | jargon     | sec-0002=2 sec-0001=1   |                  | what if I lose my YubiKey
# --- findable, but outranked: the answer is one sentence late in a billing page; BM25 finds it on its words,
#     the model puts a dozen webhook pages above it (cosine still above the calibrated threshold) ---
q105 | bill | user-words | bill-0026=2             | ranking-failure  | will we get the webhooks we missed once we're active again
q106 | bill | user-words | bill-0023=2             | ranking-failure  | can I have more than two live webhook endpoints
# --- text the model never read, and a diluted page (source/docs_long.py): the answer lies beyond the model's 256-token
#     window, or in one paragraph of a page about other things ---
q107 | it   | user-words | it-0043=2               | truncated        | is there somewhere safe to lock my bicycle and a shower after cycling in
q108 | hr   | user-words | hr-0041=2               | truncated        | who pays for my cat's flight, crate and pet passport
q109 | bill | user-words | bill-0035=2             | diluted          | who pays the currency conversion fee when we refund a customer abroad
"""


def parse(table: str) -> list[tuple[str, str, str, str, dict[str, int], tuple[str, ...]]]:
    """The rows of ``table`` as (query_id, text, area, style, {doc_id: relevance}, planted situations)."""
    rows = []
    for line in table.strip("\n").splitlines()[1:]:  # after the header
        if line.startswith("#"):
            continue
        qid, area, style, judged, planted, text = (cell.strip() for cell in line.split("|", 5))
        rels = {doc_id: int(grade) for doc_id, grade in (pair.split("=") for pair in judged.split())}
        rows.append((qid, text, area, style, rels, tuple(planted.split())))
    return rows


QUERIES = parse(TABLE)
