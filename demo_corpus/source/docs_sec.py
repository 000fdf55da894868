"""Security pages of the Quaystone Labs knowledge base (fictional; written for this project, CC0)."""

from __future__ import annotations

DOCS: list[tuple[str, str, str]] = [
    (
        "sec-0001",
        "MFA enrolment in Keystone",
        "Multi-factor authentication is mandatory for every Keystone account. At first sign-in you enrol Keystone"
        " Verify, our push authenticator app, and a TOTP fallback in any standard authenticator app. "
        "Administrators of production systems, finance systems and Keystone itself must also register a FIDO2 "
        "hardware key (YubiKey 5 series, issued by IT). SMS codes are not accepted. You can register up to three "
        "factors and should keep at least two, so losing one device does not lock you out.",
    ),
    (
        "sec-0002",
        "Authenticator recovery and TOTP re-enrolment",
        "If your enrolled factor is unavailable (replaced or wiped handset, deleted authenticator app, lost "
        "hardware key), you cannot complete a Keystone challenge and must go through factor recovery. Open a "
        "Lantern ticket of type 'Factor recovery' from a colleague's session or call the service desk. An agent "
        "verifies your identity over video with your badge or passport and issues a one-time bypass code valid "
        "for 30 minutes. Use it to sign in, remove the old factor and re-enrol Keystone Verify and a new TOTP "
        "seed. Recovery is logged and your manager is notified.",
    ),
    (
        "sec-0003",
        "Incident severity levels",
        "Incidents are classified by customer impact. SEV1: Relay API or dashboard unavailable or losing data for"
        " many customers, or a confirmed breach of customer data. SEV2: a major feature degraded or a single "
        "enterprise customer fully impacted. SEV3: minor degradation with a workaround. SEV4: internal-only "
        "issues. SEV1 and SEV2 incidents get an incident commander, a status page update within 15 minutes and a "
        "postmortem. When unsure, declare the higher severity and downgrade later.",
    ),
    (
        "sec-0004",
        "Reporting a security incident",
        "Report anything that might be a security incident immediately: a clicked malicious link, credentials "
        "typed into a fake page, malware alerts, customer data sent to the wrong recipient, or an unknown person "
        "in the office. During working hours post in #sec-help; at any time page the security on-call in Beacon "
        "(service 'security-oncall'). Do not try to investigate yourself and do not delete anything. If you "
        "entered your password on a suspicious page, change it right away and tell security which page it was.",
    ),
    (
        "sec-0005",
        "Reporting phishing emails",
        "Phishing messages try to make you click a link, open an attachment, pay an invoice or type your password"
        " into a fake page, and they often look like they come from a manager, a supplier or a known service. To "
        "report one, use the Report button (the Hook add-in) in Gmail: it removes the message from your inbox and"
        " sends it to the security team. Warning signs are unexpected requests for payment or gift cards, "
        "pressure to act fast, and a sender address that does not match the display name. We also run simulated "
        "phishing campaigns every month; reporting one counts as a pass. If you already clicked a link or entered"
        " credentials, also page security-oncall in Beacon.",
    ),
    (
        "sec-0006",
        "Quarterly access reviews in Sextant",
        "Every quarter, resource owners certify who has access to their systems in Sextant. Campaigns open on the"
        " first Monday of January, April, July and October and run for three weeks. For each grant the owner "
        "chooses keep, reduce or revoke; grants not reviewed by the deadline are revoked automatically. "
        "Privileged groups such as prod-operator and finance-admin are reviewed monthly. The results are evidence"
        " for our SOC 2 report, so please do not approve in bulk without looking.",
    ),
    (
        "sec-0007",
        "Requesting access to a system",
        "Access is granted on least privilege through Sextant. Search for the application or group, pick the role"
        " you need and give a business reason. The request goes to the resource owner and, for privileged roles, "
        "to security as well. Standard roles are usually approved within one working day. Temporary access can be"
        " requested for up to 30 days and is removed automatically. Do not share accounts or ask colleagues to "
        "run things on your behalf to skip the process.",
    ),
    (
        "sec-0008",
        "Data classification",
        "All information at Quaystone has one of four classes. Public: approved for publication. Internal: the "
        "default for company information. Confidential: customer data, contracts, financial results and employee "
        "records. Restricted: credentials, encryption keys, security findings and special-category personal data."
        " Confidential and Restricted data must stay in approved systems, may only be shared externally under an "
        "NDA or contract, and Restricted data may never be copied to laptops.",
    ),
    (
        "sec-0009",
        "Saltmarsh: post-termination purge schedule",
        "Saltmarsh governs tenant artefacts after contract termination. At T+0 the tenant is tombstoned and "
        "ingestion endpoints reject writes. At T+30 exports are no longer served. At T+90 primary stores are "
        "purged and the tenant's data keys are destroyed, which renders object-store replicas and backups "
        "cryptographically unreadable. Billing ledgers are exempt and kept for ten years for statutory reasons. "
        "Legal holds suspend the schedule for the affected tenant only. Purge certificates are generated "
        "automatically and filed with the contract record.",
    ),
    (
        "sec-0010",
        "Disk encryption and recovery keys",
        "All laptops use full-disk encryption: FileVault on macOS and BitLocker on Windows, enforced by Mooring. "
        "Recovery keys are escrowed in Mooring when encryption is enabled and rotated after each use. If your "
        "laptop asks for a recovery key after a firmware update or a failed login sequence, contact the service "
        "desk with your serial number; after verifying your identity they read you the key. Never store the "
        "recovery key yourself.",
    ),
    (
        "sec-0011",
        "Password manager",
        "Use 1Password Business for every work credential that is not covered by Keystone single sign-on. Each "
        "team has shared vaults for team credentials; personal work logins go in your private vault. Do not keep "
        "passwords in browsers, documents, Slack or notes. Your 1Password account is linked to Keystone, and you "
        "can also keep personal passwords in a free family account that stays yours when you leave.",
    ),
    (
        "sec-0012",
        "Secrets in source code",
        "Never commit secrets such as API keys, passwords or private keys. Every repository runs gitleaks as a "
        "pre-commit hook and in CI, and pushes containing secrets are blocked. Store secrets in Vault and read "
        "them at runtime. If a secret is committed anyway, treat it as compromised: rotate it first, then remove "
        "it from history and tell security in #sec-help. Deleting the commit alone is not enough because forks "
        "and caches keep copies.",
    ),
    (
        "sec-0013",
        "Vulnerability remediation deadlines",
        "Findings from scanners, pentests and the bug bounty are tracked in Jira project VULN. Fix deadlines "
        "depend on severity: critical within 7 days, high within 30 days, medium within 90 days and low at the "
        "owner's discretion. Internet-facing services count one level higher. If a deadline cannot be met, "
        "request an exception before it expires. Overdue findings are reported to the CTO every week.",
    ),
    (
        "sec-0014",
        "Bug bounty programme",
        "Quaystone runs a private bug bounty programme with invited researchers. Scope covers the Relay API, the "
        "customer dashboard and our mobile apps. Rewards range from EUR 150 for low findings to EUR 10,000 for "
        "critical ones. If an outside researcher contacts you directly about a vulnerability, do not engage on "
        "the technical details; forward the message to security@quaystone.example and thank them. Payments are "
        "made through the bug bounty platform, and findings are tracked in the VULN project with the same "
        "deadlines as internal findings.",
    ),
    (
        "sec-0015",
        "Tollgate: vendor security review",
        "Before we buy or trial any software or service that will hold Internal, Confidential or Restricted data,"
        " it goes through Tollgate, our vendor security review. Submit the vendor in Tollgate with the data it "
        "will receive; low-risk vendors are approved within three working days, high-risk ones need their SOC 2 "
        "report or ISO 27001 certificate and a data processing agreement. Free tools and browser extensions count"
        " as vendors too.",
    ),
    (
        "sec-0016",
        "Acceptable use of company devices",
        "Company laptops and phones are for work, with reasonable personal use allowed. Do not install pirated "
        "software, do not disable Mooring, Cairn or the endpoint protection agent, and do not let family members "
        "use your work laptop. Do not connect company devices to crypto-mining or file-sharing networks. "
        "Monitoring is limited to security telemetry described in the privacy notice. Breaking these rules can "
        "lead to disciplinary action. Questions about whether a particular use is acceptable go to #sec-help.",
    ),
    (
        "sec-0017",
        "Travel security and high-risk destinations",
        "Some destinations are on the high-risk travel list maintained by security. For those, you travel with a "
        "loaner laptop and loaner phone collected from IT at least two days before departure, with access to only"
        " the systems you need. Do not take your usual devices. After the trip the loaners are wiped and "
        "inspected. Border officials may ask you to unlock a device; comply and report it to security afterwards.",
    ),
    (
        "sec-0018",
        "Screen lock and clean desk",
        "Lock your screen whenever you step away; managed devices lock automatically after 5 minutes of "
        "inactivity. Do not leave printed Confidential documents on desks or printers, and use the locked "
        "shredding bins in each office. In public places use a privacy filter and avoid calls about customers "
        "where you can be overheard. Visitors must sign in at reception and be accompanied at all times. "
        "Whiteboards in meeting rooms should be wiped after customer discussions.",
    ),
    (
        "sec-0019",
        "Annual security awareness training",
        "Everyone completes the security awareness course in the Lighthouse learning platform every year by 31 "
        "January, and new joiners within their first 30 days. The course takes about 45 minutes and covers "
        "phishing, data classification, secure remote work and incident reporting. Engineers also complete the "
        "secure coding module. Keystone reminds you for two weeks and then restricts access until you finish. "
        "Completion rates per department are reported to the leadership team monthly, and the course content is "
        "refreshed every year based on real incidents.",
    ),
    (
        "sec-0020",
        "Break-glass access to production",
        "If a SEV1 incident requires privileges you do not normally hold, use the break-glass procedure: run "
        "'jetty breakglass' with the Foghorn incident number. You get prod-admin for 2 hours, security-oncall is "
        "paged automatically and the session is recorded. Every break-glass use is reviewed within one working "
        "day. Using break-glass outside an incident is a disciplinary matter. The 2-hour grant cannot be "
        "extended; run the command again if the incident is still open, which pages security again.",
    ),
    (
        "sec-0021",
        "Audit logging",
        "All production systems send audit logs to the central logging platform, where they are immutable and "
        "retained for 400 days. Logs include authentication events, privilege changes, data exports and "
        "configuration changes. Logs must not contain secrets or full payment card numbers. Security reviews "
        "high-risk events daily with automated detections. Application teams must not build their own audit "
        "trails; use the shared audit library, which adds the request id, actor and tenant to every entry. Access"
        " to raw logs is itself logged and reviewed.",
    ),
    (
        "sec-0022",
        "Bluewater: attestation evidence calendar",
        "Bluewater is the programme that keeps our SOC 2 Type II attestation current. Each control has an owner "
        "and an evidence cadence in the Bluewater tracker: quarterly items such as Sextant certifications and "
        "backup restore tests, monthly items such as vulnerability SLAs. The observation window runs from 1 April"
        " to 31 March and the external assessor's fieldwork takes place in April. Missing evidence is escalated "
        "to the control owner's director.",
    ),
    (
        "sec-0023",
        "Customer security questionnaires",
        "Sales and customer success receive security questionnaires from prospects. First check the Trust Center "
        "and the standard answer library, which cover most questions and can be shared under NDA together with "
        "our SOC 2 report. Send remaining questions to #security-questionnaires; security answers within five "
        "working days. Do not promise controls we do not have. Contract clauses about security, such as audit "
        "rights or breach notification times, must be reviewed by Legal and security together before signature.",
    ),
    (
        "sec-0024",
        "Removable media",
        "USB storage devices are blocked for writing on managed laptops. If you need to hand over files to a "
        "customer or partner, use a Google Drive share with an expiry date. Exceptions for specific roles, for "
        "example hardware testing, are granted through the security exception process and are time-limited. "
        "Reading from USB devices is allowed, but files are scanned by the endpoint protection agent first. Found"
        " USB sticks must be handed to security, never plugged in.",
    ),
    (
        "sec-0025",
        "Email security banners and spoofing protection",
        "Messages from outside Quaystone carry a yellow 'External sender' banner. Our domain publishes DMARC with"
        " a reject policy, so mail that pretends to come from quaystone.example is bounced. If an external "
        "message claims to be from a colleague, it is not; report it. Automatic forwarding of work email to "
        "personal accounts is blocked. Security also blocks lookalike domains when they are registered. Messages "
        "with executable attachments or password-protected archives from outside are quarantined and released on "
        "request after inspection.",
    ),
    (
        "sec-0026",
        "Suspicious sign-in alerts",
        "Keystone alerts security when a sign-in looks unusual, for example impossible travel between two "
        "countries within an hour, a new device in a new country, or many failed attempts. You may receive an "
        "email asking whether it was you. If it was not, click 'This wasn't me', which signs you out everywhere, "
        "and change your password. Travelling with Gatehouse connected to a foreign gateway can trigger the "
        "alert.",
    ),
    (
        "sec-0027",
        "Encryption standards",
        "Data in transit uses TLS 1.2 or newer with modern cipher suites; TLS 1.0 and 1.1 are disabled on all "
        "public endpoints. Data at rest is encrypted with AES-256 using keys held in our cloud key management "
        "service, with customer-specific data keys for Relay tenants. Do not design your own cryptography; use "
        "the crypto helper libraries maintained by the platform team. Certificates for internal services are "
        "issued by the internal CA and rotated automatically. Passwords are stored with Argon2id, never with a "
        "fast hash.",
    ),
    (
        "sec-0028",
        "Security champions",
        "Each engineering team nominates a security champion who spends about 10 percent of their time on "
        "security: reviewing risky changes, triaging VULN tickets and joining the monthly champions sync. "
        "Champions get extra training budget and early access to threat models. Talk to your manager if you would"
        " like to take the role. The role is reviewed every year, and champions can hand over to a teammate at "
        "any time.",
    ),
    (
        "sec-0029",
        "Personal data breach notification",
        "If personal data may have been exposed, security and Legal assess the incident immediately. Where the "
        "GDPR applies, the supervisory authority must be notified within 72 hours of becoming aware, and affected"
        " customers as controllers are notified without undue delay under our DPA, in practice within 48 hours. "
        "Only Legal sends breach notifications; do not contact customers yourself. The timeline, decisions and "
        "evidence are recorded in the incident record so the notification can be justified later.",
    ),
    (
        "sec-0030",
        "Security policy exceptions (SEC-EX)",
        "When a team cannot meet a security policy, it requests an exception with the SEC-EX form in Lantern. The"
        " form names the policy, the risk, the compensating controls and an end date of at most six months. "
        "Exceptions are approved by the CISO, or by the CTO for critical risks, and listed in the risk register. "
        "Expired exceptions must be renewed or closed.",
    ),
]
