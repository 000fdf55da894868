"""Billing, finance and customer support pages (fictional; written for this project, CC0)."""

from __future__ import annotations

DOCS: list[tuple[str, str, str]] = [
    (
        "bill-0001",
        "Relay plans and prices",
        "Relay has three plans. Starter costs EUR 49 per month and includes 25,000 tracking events. Growth costs "
        "EUR 399 per month and includes 400,000 events, SSO for the dashboard and priority support. Enterprise is"
        " priced by contract with volume tiers, a 99.95 percent uptime commitment and a technical account "
        "manager. Annual billing gives two months free on Starter and Growth. Prices exclude VAT.",
    ),
    (
        "bill-0002",
        "Usage overage charges",
        "Events above the plan allowance are charged as overage at EUR 0.002 per event on Starter and EUR 0.0012 "
        "on Growth, billed in arrears on the next invoice. Customers receive account.usage_threshold webhooks and"
        " emails at 80 and 100 percent of the allowance. Enterprise contracts set their own overage rate. Support"
        " can waive a one-off overage caused by a customer-side bug once per year.",
    ),
    (
        "bill-0003",
        "Customer invoices",
        "Invoices are issued on the first day of each billing period and sent to the billing contacts on the "
        "account. Payment terms are 14 days for card and SEPA customers and net 30 for invoiced Enterprise "
        "customers. Customers can download PDF invoices and change billing contacts in the dashboard under "
        "Settings > Billing. Each invoice number has the format QS-INV-YYYY-NNNNNN. Finance sends reminders for "
        "overdue invoices through Ledgerwise; see the collections page for what happens next.",
    ),
    (
        "bill-0004",
        "Undertow: collections cadence",
        "Undertow is the automated collections cadence run by Ledgerwise. When a charge attempt is refused by the"
        " issuer, Undertow retries on day 1, 3, 7 and 14 and sends the corresponding notices to the billing "
        "contacts. On day 14 the dashboard shows a banner to all admins. On day 21 the tenant moves to restricted"
        " state: ingestion continues but API reads and webhooks stop. On day 45 the tenant is terminated and "
        "handed to Saltmarsh. Finance can pause Undertow for accounts in negotiation.",
    ),
    (
        "bill-0005",
        "Refunds",
        "Refunds are rare because most billing problems are better solved with a credit on the next invoice. "
        "Monthly subscriptions are not refunded for partial months. Overage charges are not refundable except "
        "when caused by a Relay defect. Refunds go back to the original payment method within 10 working days, "
        "and any refund above EUR 1,000 must be approved by a billing team lead. Record the reason in Ledgerwise "
        "so that finance can report on it. Annual subscriptions are the exception: they can be refunded pro rata "
        "within 30 days of the start or renewal date. After those 30 days, a cancelled annual plan simply runs "
        "until the end of its term and is not refunded.",
    ),
    (
        "bill-0006",
        "Service level agreement credits",
        "Paid plans include a monthly uptime commitment of 99.9 percent (99.95 percent on Enterprise). If monthly"
        " uptime falls below the commitment, the customer is entitled to a service credit: 10 percent of the "
        "monthly fee below the commitment, 25 percent below 99.0 percent and 50 percent below 95.0 percent. "
        "Credits must be claimed within 30 days of the end of the month and are applied to the next invoice; they"
        " are never paid out in cash.",
    ),
    (
        "bill-0007",
        "VAT and tax IDs",
        "Quaystone Labs B.V. charges Dutch VAT to customers in the Netherlands and to consumers elsewhere in the "
        "EU. Business customers in other EU countries who provide a valid VAT ID are invoiced under the reverse "
        "charge. UK customers are charged UK VAT through our UK entity. Customers outside the EU and UK are not "
        "charged VAT. Tax IDs are validated against VIES when entered in the dashboard.",
    ),
    (
        "bill-0008",
        "Changing plans",
        "Customers can upgrade at any time in the dashboard; the upgrade takes effect immediately and the price "
        "difference for the rest of the period is charged pro rata. Downgrades take effect at the end of the "
        "current billing period. Moving from monthly to annual billing starts a new annual term on the day of the"
        " change. Enterprise changes go through the account manager.",
    ),
    (
        "bill-0009",
        "Cancelling a subscription",
        "Customers cancel in the dashboard under Settings, Billing, Cancel plan, or by asking support in a "
        "ticket. The Cormorant desk calls Growth and Enterprise accounts before a cancellation is processed. The "
        "subscription stays active until the end of the paid period. After that the account is read-only for 30 "
        "days, during which the customer can still export all shipments and tracking events from the dashboard. "
        "When the 30 days are over the account is closed and its data is deleted according to the retention "
        "schedule. A cancelled account can be reactivated during the read-only days without losing data. Annual "
        "plans cancelled after the refund window keep running until the end of the annual term.",
    ),
    (
        "bill-0010",
        "Purchase orders and supplier onboarding",
        "Enterprise customers often need Quaystone registered as a supplier before they can pay. Send their "
        "supplier forms to finance-ops@quaystone.example together with the customer name and contract value. "
        "Finance provides our bank letter, W-9 or W-8BEN-E, certificate of incorporation and insurance "
        "certificates. If the customer requires a purchase order number on invoices, add it in Ledgerwise before "
        "the next invoice run. Supplier portals such as Ariba or Coupa are handled by finance-ops only; do not "
        "create accounts on them yourself.",
    ),
    (
        "bill-0011",
        "Customer support tiers",
        "Standard support (Starter): email and chat during business hours, first response within one business "
        "day. Premium support (Growth): first response within 4 hours on business days and within 8 hours at "
        "weekends for P1. Enterprise support: 24/7 response within one hour for P1, a named technical account "
        "manager and quarterly reviews. Response times are measured from ticket creation to the first human "
        "reply.",
    ),
    (
        "bill-0012",
        "Ticket priorities for customer support",
        "Support agents set ticket priority from the customer's impact. P1: production integration down or data "
        "not flowing for the whole account. P2: a major feature degraded or a subset of shipments affected. P3: "
        "general questions, minor bugs and how-to requests. P4: feature requests and feedback. Customers can "
        "suggest a priority, but the agent decides. P1 tickets page the support duty manager. Priority can be "
        "raised or lowered as the situation changes; note the reason in an internal comment.",
    ),
    (
        "bill-0013",
        "Escalating a ticket to engineering",
        "When a customer problem needs engineering, create a Lifeline escalation: a Jira issue in project RELSUP "
        "linked to the support ticket, with the account id, request_ids, steps to reproduce and the customer "
        "impact. Lifeline issues are triaged by the owning team daily, and within one hour for P1. Keep the "
        "customer updated from the support ticket; engineers do not reply to customers directly.",
    ),
    (
        "bill-0014",
        "Macro: where is my shipment (WISMO) tickets",
        "Many tickets come from our customers' end customers asking where their parcel is. Relay only passes on "
        "carrier data, so we cannot locate parcels. Use the WISMO macro: thank them, explain that Relay is a "
        "tracking platform used by the shop they ordered from, and ask them to contact that shop, who can speak "
        "to the carrier. Do not share tracking details with anyone who is not the account holder.",
    ),
    (
        "bill-0015",
        "Cormorant: save desk concession ladder",
        "Cormorant is the save desk for at-risk paying tenants. Triggers: a cancellation intent in the dashboard,"
        " a downgrade request, or a health score below 40. The Cormorant specialist contacts the account within "
        "one working day and may apply the concession ladder: step one, a 15 percent reduction for three cycles; "
        "step two, 20 percent for three cycles plus a free onboarding session; step three needs the VP Customer's"
        " approval. Concessions are recorded in Ledgerwise with reason code CMR.",
    ),
    (
        "bill-0016",
        "Credit notes and invoice corrections",
        "Issued invoices are never edited. To correct an invoice, issue a credit note in Ledgerwise referencing "
        "the original invoice and then issue a corrected invoice. Credit notes up to EUR 500 can be issued by "
        "billing agents; larger ones need a billing team lead. Common reasons are a wrong VAT ID, a wrong billing"
        " address or a missed purchase order number. The customer receives both documents by email automatically,"
        " and the corrected invoice keeps the original due date.",
    ),
    (
        "bill-0017",
        "Revenue recognition basics",
        "Subscription revenue is recognised evenly over the service period, so an annual prepayment is deferred "
        "and released monthly. Overage revenue is recognised in the month the events occur. Service credits "
        "reduce revenue in the month they are granted. Implementation fees for Enterprise onboarding are "
        "recognised over the expected customer life of 36 months. Questions about a specific contract, for "
        "example one with a free period or a usage commitment, go to the revenue accountant before the deal is "
        "signed.",
    ),
    (
        "bill-0018",
        "Month-end close checklist",
        "Finance closes each month by working day 5. Day 1: Ledgerwise invoice run and revenue report exported. "
        "Day 2: bank reconciliations and card clearing. Day 3: accruals for unbilled supplier costs and payroll "
        "journals from Harbor. Day 4: intercompany reconciliation between the B.V., UK Ltd, GmbH and Pte Ltd. Day"
        " 5: management accounts reviewed by the financial controller. Anything that blocks the close is raised "
        "in #finance-close by noon on the day it is due so the controller can decide on an estimate.",
    ),
    (
        "bill-0019",
        "Paying suppliers",
        "Supplier invoices must be addressed to the right Quaystone entity and sent to ap@quaystone.example, "
        "never to an individual. Each invoice needs a purchase order or a budget owner's approval in the accounts"
        " payable workflow. Payment runs happen on Tuesdays and Fridays, and standard terms are 30 days. Changes "
        "to a supplier's bank details are verified by phone before the next payment. Urgent payments outside the "
        "runs need the financial controller's approval and a written reason.",
    ),
    (
        "bill-0020",
        "Company credit cards",
        "Employees who regularly pay for software, advertising or team events can request a Tally virtual card. "
        "Cards have a monthly limit set by your budget owner, usually EUR 1,000, and are locked to certain "
        "merchant categories. Every transaction must have a receipt attached in Tally within 7 days or the card "
        "is frozen. Subscriptions paid by card must also pass the Tollgate vendor review.",
    ),
    (
        "bill-0021",
        "Customer data deletion and export requests",
        "Account owners may ask support to export or delete their data. Exports are self-service in the dashboard"
        " under Settings > Data; point customers there first. For deletion before contract end, verify that the "
        "requester is an account owner, confirm in writing that deletion is irreversible, and create a Lifeline "
        "issue with the label data-deletion. Engineering completes deletion within 30 days and support sends a "
        "confirmation.",
    ),
    (
        "bill-0022",
        "Transferring account ownership",
        "To transfer ownership of a Relay account, the current owner can promote another admin to owner in "
        "Settings > Team. If the owner has left the customer's company, support can transfer ownership after "
        "receiving a signed letter on company letterhead from an authorised signatory, and after a call to the "
        "company's main phone number to confirm. The transfer is logged on the account, and the previous owner is"
        " removed from the team unless the new owner keeps them as an admin. Support never transfers ownership on"
        " the basis of an email alone.",
    ),
    (
        "bill-0023",
        "Free trial",
        "New accounts get a 14-day free trial of the Growth plan with up to 10,000 tracking events and no credit "
        "card required. At the end of the trial the account moves to read-only until a plan is chosen. A trial "
        "can be extended once by 14 days by sales or support for prospects in an active evaluation. Trial "
        "accounts cannot use live webhooks to more than two endpoints. Sales is notified when a trial account "
        "creates its first live shipment.",
    ),
    (
        "bill-0024",
        "Non-profit and education discount",
        "Registered non-profits, schools and universities receive 30 percent off Starter and Growth plans. "
        "Support verifies eligibility from the registration certificate and applies coupon NPO30 in Ledgerwise. "
        "The discount cannot be combined with other promotions and is reviewed every year at renewal. Eligible "
        "customers can apply through the form on the pricing page. The discount does not apply to Enterprise "
        "contracts, which are negotiated separately, or to overage charges.",
    ),
    (
        "bill-0025",
        "Payment methods and currencies",
        "Customers can pay by card (Visa, Mastercard, American Express), SEPA direct debit, or bank transfer for "
        "annual and Enterprise plans. Prices are available in EUR, USD and GBP; the currency is fixed when the "
        "first subscription starts and can only be changed by support at renewal. Bank transfers must quote the "
        "invoice number. Card payments are processed by our payment provider and card numbers never reach "
        "Quaystone systems. SEPA mandates are collected in the dashboard when the customer chooses direct debit.",
    ),
    (
        "bill-0026",
        "Reactivating a suspended account",
        "Accounts in restricted state after failed payments are reactivated automatically within minutes of a "
        "successful payment. The customer can pay the open invoice from the banner in the dashboard or update the"
        " payment method. Accounts that were terminated cannot be reactivated and must sign up again. Data is not"
        " lost while an account is restricted: tracking events keep arriving and are delivered as webhooks once "
        "the account is active again. Support can grant a 48-hour grace extension once per account.",
    ),
    (
        "bill-0027",
        "Support quality reviews",
        "Each month team leads review five tickets per agent against the quality scorecard: correct answer, tone,"
        " use of macros, priority and follow-up. Customer satisfaction surveys are sent when a ticket is solved; "
        "scores below 3 out of 5 are reviewed within a week. Results are discussed in monthly 1:1s. Agents can "
        "flag a ticket for calibration if they disagree with a score. Top-scoring answers are added to the macro "
        "library so the whole team benefits.",
    ),
    (
        "bill-0028",
        "Weekend support coverage",
        "Enterprise customers are entitled to 24/7 support for P1 tickets. Outside business hours, a support duty"
        " manager from a weekly rota in Beacon receives P1 pages and can pull in engineering through a Lifeline "
        "escalation. Weekend duty is compensated like engineering on-call. Non-P1 tickets wait for Monday. The "
        "duty manager can also approve emergency service credits and contact the customer's technical contact by "
        "phone. Handover notes for Monday go into the #support-weekend channel.",
    ),
    (
        "bill-0029",
        "Chargebacks and payment disputes",
        "When a customer disputes a card payment with their bank, Ledgerwise creates a dispute case. Billing "
        "agents have 7 days to submit evidence: the contract or order confirmation, invoices, usage data and "
        "correspondence. Lost disputes are written off and the account is reviewed by finance before further "
        "service is provided. The dispute fee of EUR 15 is charged by the payment provider regardless of the "
        "outcome. Repeated disputes from the same account are escalated to the head of billing.",
    ),
    (
        "bill-0030",
        "Spend approvals",
        "Every purchase needs approval by the budget owner. Purchases above EUR 5,000 also need the department "
        "director, and above EUR 25,000 the CFO. Multi-year commitments always need the CFO regardless of amount."
        " Splitting a purchase to stay under a threshold is not allowed. Approvals are recorded in the purchasing"
        " workflow, which also checks that the vendor has passed the Tollgate review. Ask finance-ops if you are "
        "unsure who owns a budget.",
    ),
    (
        "bill-0031",
        "Announcing price changes to customers",
        "Price increases for existing customers are announced by email at least 30 days before they take effect, "
        "and 60 days for annual plans, which change at renewal. The pricing page and the customer email template "
        "are prepared by marketing and reviewed by Legal. Support gets an FAQ one week before the announcement. "
        "Existing Enterprise contracts keep their prices until renewal unless the contract says otherwise. "
        "Customers who object can downgrade or cancel without penalty before the change takes effect.",
    ),
    (
        "bill-0033",
        "Support agent handbook",
        "Welcome to Customer Support. We answer tickets from Relay customers by email and chat, in English and "
        "German, from 08:00 to 20:00 CET, with a weekend duty manager for Enterprise P1s. Every ticket gets a "
        "first reply within the target of its support tier, and every reply is written so that the customer could"
        " forward it to their boss. Use macros as a starting point, never as the whole answer. Tag each ticket "
        "with product area and root cause before solving it; the tags drive our monthly report to product "
        "management. Pair with a senior agent for your first two weeks and shadow at least one Lifeline "
        "escalation. Keep internal notes factual, because customers can request them. When something went wrong "
        "on our side and a customer is upset, any agent may offer a goodwill credit of up to EUR 100 as an "
        "apology. Apply it in Ledgerwise with reason code GW; larger amounts need a team lead.",
    ),
]
