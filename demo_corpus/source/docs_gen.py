"""Company-wide pages (fictional; written for this project, CC0). Deliberately generic: these are the hubs."""

from __future__ import annotations

DOCS: list[tuple[str, str, str]] = [
    (
        "gen-0001",
        "Frequently asked questions",
        "Answers to the questions we hear most often, about laptops, passwords, Wi-Fi, the VPN, time off, sick "
        "days, parental leave, pay, expenses, travel, phishing, access, API keys, rate limits, webhooks, "
        "invoices, refunds and plans. Each answer points to the page that has the details. How do I get help with"
        " my laptop or my account? Open a ticket in Lantern or ask in #it-help. How much time off do I get, and "
        "how do I book it? See the leave pages and Harbor. How do I claim an expense? Submit it in Tally within "
        "60 days. I clicked a suspicious link, what now? Tell #sec-help at once. How do I get access to a system?"
        " Request it in Sextant. Where are the API docs? In the Relay section of this wiki. Who answers customer "
        "billing questions? billing@quaystone.example. Anything else? Ask in #help-desk.",
    ),
    (
        "gen-0002",
        "Company glossary",
        "Words you will hear at Quaystone. Beacon: paging and on-call. Lantern: the IT service desk portal for "
        "tickets and requests. Keystone: single sign-on, passwords and multi-factor login. Gatehouse: the VPN. "
        "Harbor: the HR system for time off, payroll and your profile. Tally: expenses, cards and travel booking."
        " Sextant: access requests and reviews. Mooring: device management for laptops and phones. Jetty: the SSH"
        " bastion. Tidepool: staging. Foghorn: the incident bot in Slack. Compass: performance reviews. "
        "Ledgerwise: customer billing. Relay: our product, the shipment tracking API. Other code names belong to "
        "programmes; search the wiki for their pages.",
    ),
    (
        "gen-0003",
        "About this knowledge base",
        "This wiki holds the internal pages of Quaystone Labs: IT and operations, People policies, security, the "
        "public Relay API documentation, and billing, finance and customer support. Each page has an owner listed"
        " at the bottom and is reviewed at least once a year. Pages marked archived are kept for reference and "
        "may be out of date. If something is wrong or missing, comment on the page or ask in #help-desk.",
    ),
    (
        "gen-0004",
        "Slack channels directory",
        "The channels you will use most. #help-desk: any question when you do not know who owns it. #it-help: "
        "laptops, Wi-Fi, VPN, accounts and software. #ask-people: leave, pay, benefits, expenses, policies and "
        "onboarding. #sec-help: security questions, suspicious emails and access. #relay-api: questions about the"
        " API, keys, limits and webhooks. #billing-ops: customer invoices, plans and refunds. #deploys and "
        "#incidents: production changes and outages. #announcements: company news, read-only. Office channels "
        "such as #leeds-office and #munich-office carry local news. Please ask in channels rather than in direct "
        "messages so that answers help the next person too.",
    ),
    (
        "gen-0005",
        "Who owns what: teams and contacts",
        "Each topic has an owning team and a contact channel. IT Operations: laptops, phones, accounts, networks,"
        " printers and the service desk. People team: time off, payroll, benefits, expenses, recruiting and "
        "onboarding. Security: access, incidents, phishing, policies and audits. Platform and SRE: production, "
        "on-call, deploys and staging. Developer Experience: the public API documentation, SDKs and developer "
        "support. Finance: invoices, customer billing, suppliers, budgets and approvals. Customer Support: "
        "customer tickets, escalations and account changes. If a question spans several teams, start with the "
        "team that owns the system you are using.",
    ),
]
