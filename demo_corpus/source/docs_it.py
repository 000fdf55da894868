"""IT operations pages of the Quaystone Labs knowledge base (fictional; written for this project, CC0).

The alert runbooks (titles "Runbook: <AlertName>") share the same opening paragraph, as runbooks generated
from one template do; their specific content starts after the first 60 words."""

from __future__ import annotations

DOCS: list[tuple[str, str, str]] = [
    (
        "it-0001",
        "Requesting a new laptop",
        "New and replacement laptops are ordered through the Lantern catalogue, item 'Laptop - standard build'. "
        "Engineering and data roles get a MacBook Pro 14 (M3 Pro, 36 GB); everyone else gets a ThinkPad T14 Gen 4"
        " or a MacBook Air 13, your choice. Your manager approves the ticket, then IT Logistics ships the device "
        "pre-enrolled in Mooring within 5 working days to the office or your home address. Leeds and Munich keep "
        "two spare devices each for same-day swaps if your current machine is broken. Do not buy a laptop "
        "yourself and expense it: unmanaged devices cannot reach Keystone or Gatehouse. When the new device "
        "arrives, return the old one within 14 days using the prepaid label in the box.",
    ),
    (
        "it-0002",
        "Driftwood: hardware rotation cycle",
        "Driftwood is the name of the rotation programme for end-user compute. Each managed endpoint carries an "
        "asset tag and a commissioning date in Mooring. At 36 months the asset enters the Driftwood queue and the"
        " assigned holder receives a replacement allocation without raising anything; at 42 months the old asset "
        "is blocked from Keystone. Rotation batches ship in February, May, August and November. Holders choose "
        "between the two current models in the rotation form, and accessories are not part of the rotation. "
        "Returned assets are wiped to NIST 800-88 purge level by our recycling partner and resold, with proceeds "
        "going to the Quaystone community fund.",
    ),
    (
        "it-0003",
        "QS-Corp wireless: 802.1X certificate renewal",
        "The QS-Corp SSID uses 802.1X with EAP-TLS. Each managed device holds a client certificate issued by the "
        "Quaystone internal CA and pushed by Mooring; it is valid for 365 days. When the certificate lapses, the "
        "association fails silently and the device falls back to QS-Guest, which has no route to internal "
        "services. To renew, open Mooring Self Service, choose 'Renew network identity' and reboot. If the "
        "profile is missing entirely, the device has probably dropped out of management: raise a Lantern ticket "
        "under 'Network' and include the serial number.",
    ),
    (
        "it-0004",
        "Gatehouse VPN: installing and connecting",
        "Gatehouse is our VPN client, built on WireGuard, and Mooring installs it on every managed laptop. "
        "Gatehouse replaced the old AnyConnect client in 2023; uninstall AnyConnect if it is still there. To "
        "connect, open Gatehouse from the menu bar, sign in with Keystone and approve the push prompt. Choose the"
        " gateway nearest to you: ams-1 for Europe, iad-1 for the Americas and sin-1 for Asia. On Linux "
        "workstations, install the gatehouse package from the internal apt mirror. You need Gatehouse for "
        "Tidepool, the internal Grafana, the Jetty bastion and the finance share; Slack, Google Workspace and "
        "Lantern work without it. Sessions last 12 hours. If the client refuses to connect, see the Gatehouse "
        "error codes page.",
    ),
    (
        "it-0005",
        "Gatehouse VPN: error codes",
        "Common Gatehouse errors and fixes. GH-401: device posture check failed, usually because disk encryption "
        "is off or the OS is more than 30 days behind; fix the posture item and retry. GH-409: your session is "
        "already active on another device; sign out there or wait 10 minutes. GH-503: handshake timeout, "
        "typically a hotel or airport network blocking UDP 51820; switch the transport to TCP 443 in Settings. "
        "GH-520: the gateway is in maintenance; pick another gateway. If none of these match, export the log "
        "bundle from Help > Diagnostics and attach it to a Lantern ticket under 'VPN'.",
    ),
    (
        "it-0006",
        "Gatehouse split tunnelling",
        "Gatehouse runs in split-tunnel mode: only traffic for internal ranges (10.40.0.0/14) and a short list of"
        " partner hosts goes through the tunnel, while video calls, streaming and general browsing leave directly"
        " from your own connection. This keeps Zoom quality high and avoids hair-pinning through Amsterdam. If a "
        "residential connection feels sluggish only while the tunnel is up, the usual cause is the MTU: set it to"
        " 1380 in Gatehouse Settings > Advanced. Full-tunnel mode is enforced automatically on networks flagged "
        "as untrusted and for users on the high-risk travel list.",
    ),
    (
        "it-0007",
        "On-call rotation in Beacon",
        "Production on-call is scheduled in Beacon. Each service team runs a weekly rotation with a primary and a"
        " secondary engineer, and a short written summary of open alerts is passed on at every change of shift. "
        "Engineers join the rotation after their third month. Swaps are allowed: arrange it with a colleague and "
        "record an override in Beacon, do not just tell people in Slack. Install the Beacon mobile app, enable "
        "critical alerts so pages ring through Do Not Disturb, and test your notification rules with the 'Send "
        "test page' button before your first shift.",
    ),
    (
        "it-0008",
        "On-call escalation policy",
        "When Beacon pages you, acknowledge within 5 minutes. If the primary does not acknowledge, Beacon "
        "escalates to the secondary after 10 minutes and to the engineering manager on duty after 20 minutes. For"
        " customer-facing impact, declare an incident with /foghorn declare in Slack, which opens the incident "
        "channel and bridge. Escalate to a second team by paging their Beacon service directly rather than "
        "messaging individuals. If you are stuck for more than 30 minutes, page the incident commander rota, who "
        "will take coordination off your hands.",
    ),
    (
        "it-0009",
        "Runbook: BuildAgentDiskUsageHigh",
        "This runbook belongs to the SRE alert catalogue for the Relay platform. When Beacon pages you for this "
        "alert, acknowledge within 5 minutes, open the Grafana dashboard linked in the alert and post a short "
        "note in #incidents. If customers are affected for more than 15 minutes, declare an incident with "
        "/foghorn declare. Alert details follow. Fires when a Buildkite agent's /var/lib/docker volume is above "
        "85 percent. Impact: builds fail with 'no space left on device'. Steps: drain the agent in the Buildkite "
        "UI, SSH through Jetty and run 'docker system prune -af --filter until=48h'. If usage is still above 70 "
        "percent, remove stale build caches in /var/cache/bk, then undrain. If the same agent alerts twice in a "
        "week, terminate the instance and let the autoscaling group replace it.",
    ),
    (
        "it-0010",
        "Runbook: CertExpirySoon",
        "This runbook belongs to the SRE alert catalogue for the Relay platform. When Beacon pages you for this "
        "alert, acknowledge within 5 minutes, open the Grafana dashboard linked in the alert and post a short "
        "note in #incidents. If customers are affected for more than 15 minutes, declare an incident with "
        "/foghorn declare. Alert details follow. Fires when a public certificate for *.quaystone.example or "
        "api.quaystone.example expires within 14 days, which means the automatic renewal by cert-manager has "
        "failed. Check the Certificate resource in the ingress namespace with 'kubectl describe certificate'; the"
        " usual cause is a failed DNS-01 challenge after the DNS provider API token changed. Rotate the token in "
        "Vault under infra/dns, delete the failed CertificateRequest and watch for a new one. Never upload a "
        "manually issued certificate: it will not renew.",
    ),
    (
        "it-0011",
        "Runbook: Postgres primary failover",
        "The relay-core Postgres cluster is managed by Patroni with one primary and two replicas across zones. "
        "Patroni fails over automatically if the primary is unreachable for 30 seconds. For a planned switchover,"
        " run 'patronictl switchover relay-core' from the Jetty bastion during a quiet period and confirm in "
        "Grafana that replication lag is under 1 MB first. After any failover, check that PgBouncer has "
        "reconnected to the new primary and that the relay-ingest consumers resumed. Record the event in the ops "
        "log.",
    ),
    (
        "it-0012",
        "Runbook: RelayIngestLagHigh",
        "This runbook belongs to the SRE alert catalogue for the Relay platform. When Beacon pages you for this "
        "alert, acknowledge within 5 minutes, open the Grafana dashboard linked in the alert and post a short "
        "note in #incidents. If customers are affected for more than 15 minutes, declare an incident with "
        "/foghorn declare. Alert details follow. Fires when consumer group relay-ingest is more than 50,000 "
        "messages behind on the tracking-events Kafka topic for 10 minutes. Impact: tracking updates and webhook "
        "deliveries reach customers late. Steps: check the consumer dashboard for a stuck partition; if one pod "
        "is stuck, delete it. If all partitions lag, scale the deployment from 6 to 12 replicas with the "
        "relay-ingest HPA override. A poison message shows up as repeated deserialisation errors; move it to the "
        "dead-letter topic with the skip-offset job.",
    ),
    (
        "it-0013",
        "Printing in the Leeds and Munich offices",
        "Both offices use PaperCut follow-me printing. Send your job to the queue 'QS-FollowMe', walk to any "
        "printer and tap your badge to release it. Jobs wait for 8 hours before they are deleted. On a managed "
        "Mac the queue is installed by Mooring; on Windows it appears after your first login on the office "
        "network. Colour printing is on by default but please print in black and white where you can. Scanning to"
        " email works from the printer touch screen and sends the PDF to your own address.",
    ),
    (
        "it-0014",
        "Keystone password reset",
        "Keystone is our single sign-on. If you have forgotten your password, go to keystone.quaystone.example, "
        "click 'Forgot password' and confirm with your enrolled authenticator. The new password must be at least "
        "14 characters and must not appear in known breach lists; we do not force periodic changes. If your "
        "account is locked after 10 failed attempts it unlocks itself after 30 minutes. If you cannot complete "
        "the reset because you no longer have your authenticator, follow the authenticator recovery page instead;"
        " the service desk cannot read or set passwords for you.",
    ),
    (
        "it-0015",
        "Temporary elevation on managed laptops",
        "Managed laptops run without local administrator rights. Most tools are available one click away in "
        "Mooring Self Service. If you need to install something that is not there, request 'Temporary elevation' "
        "in Lantern: after approval, the Privileges app in your menu bar grants administrator rights for 4 hours "
        "and every command is logged. Engineers on the developer tooling list get pre-approved elevation. "
        "Software that processes customer data needs a vendor review before it is installed.",
    ),
    (
        "it-0016",
        "Mobile devices and BYOD",
        "You may use a personal phone for work if it is enrolled in Mooring with a work profile (Android) or user"
        " enrolment (iOS). Enrolment separates work apps and data from your personal ones; IT can wipe only the "
        "work side and cannot see personal photos, messages or browsing. Supported versions are iOS 17 and "
        "Android 13 or newer. Company phones are provided for on-call engineers and customer-facing roles on "
        "request. If you change your phone, remove the old device from Mooring.",
    ),
    (
        "it-0017",
        "File storage and shared drives",
        "Store work files in Google Drive shared drives, not in personal My Drive folders, so access survives "
        "when people change teams. Each department has a shared drive managed by its drive owners. The old Quarry"
        " network share is read-only since January 2024 and will be switched off in December; move anything you "
        "still need before then. Do not sync Restricted data to local disks. Deleted files stay in the shared "
        "drive bin for 25 days.",
    ),
    (
        "it-0018",
        "Shared mailboxes and distribution lists",
        "Request a shared mailbox or a Google group in Lantern under 'Collaboration'. Give the list an owner and "
        "a backup owner; lists without two owners are archived during the yearly clean-up. External senders are "
        "blocked from internal lists by default, so tick 'allow external' if customers or suppliers need to write"
        " to it. Naming convention: team-purpose@quaystone.example, for example billing-ops@. Membership changes "
        "are self-service for owners in the Google Groups interface.",
    ),
    (
        "it-0019",
        "Meeting rooms and video conferencing",
        "All meeting rooms run Zoom Rooms on a Neat Bar with a Neat Pad on the table. Book rooms in Google "
        "Calendar; the room joins the meeting automatically if the invite has a Zoom link. If the screen is "
        "black, tap the Neat Pad to wake it. If the room shows 'offline', unplug the Neat Bar power for ten "
        "seconds. For all-hands streaming in the Leeds atrium, book the AV team two weeks ahead through Lantern.",
    ),
    (
        "it-0020",
        "Monitors, docks and peripherals",
        "Standard peripherals are free to order from the Lantern catalogue: one 27-inch 4K monitor, a USB-C dock,"
        " a keyboard, a mouse and a wired headset. Office desks already have monitors and docks. Delivery to a "
        "home address takes up to 10 working days. Noise-cancelling headsets are available to roles that spend "
        "most of the day on calls. Peripherals are not returned when you replace your laptop; return them only "
        "when you leave.",
    ),
    (
        "it-0021",
        "Lost or stolen laptop or phone",
        "Report a lost or stolen device within one hour, even outside working hours: page security through Beacon"
        " service 'security-oncall' or call the number on the back of your badge. Security will lock the device "
        "and revoke its Gatehouse and Keystone sessions; Mooring will wipe it as soon as it comes online. Then "
        "file a police report if it was stolen and open a Lantern ticket for a replacement, quoting the police "
        "reference. You will not be charged for a lost device.",
    ),
    (
        "it-0022",
        "Laptop backups with Cairn",
        "Cairn Backup runs on every managed laptop and backs up your home folder every hour to encrypted storage "
        "in the EU. It skips Downloads, caches, virtual machines and folders bigger than 50 GB. You can restore "
        "individual files yourself from the Cairn menu bar icon for 90 days of history. Anything in Google Drive "
        "is already safe and is not backed up twice. When you receive a replacement laptop, IT restores your last"
        " Cairn snapshot during setup.",
    ),
    (
        "it-0023",
        "Service desk hours and priorities",
        "The IT service desk is staffed 08:00-18:00 CET and 08:00-18:00 US Central on working days. Tickets are "
        "prioritised as P1 (you cannot work at all, response in 30 minutes), P2 (major impact, 2 hours), P3 "
        "(normal requests, 1 working day) and P4 (questions, 3 working days). Outside staffed hours only P1 "
        "tickets page the desk on-call. Please raise a ticket in Lantern rather than messaging desk staff "
        "directly so the request is tracked.",
    ),
    (
        "it-0024",
        "Kestrel: regional evacuation drill",
        "Kestrel is the semi-annual regional evacuation drill for the Relay platform, run in March and September."
        " The incident commander declares a synthetic SEV1 against eu-west-2 and the platform is evacuated to "
        "eu-central-1 using the Patroni standby cluster and the replicated object store. Targets are an RTO of 4 "
        "hours and an RPO of 15 minutes. Every service owner keeps an evacuation checklist current in the Kestrel"
        " scorecard; red items block the next quarter's roadmap sign-off. Findings are tracked as KES tickets.",
    ),
    (
        "it-0025",
        "Change management and the CAB",
        "Production changes fall into three classes. Standard changes (pre-approved, low risk, e.g. scaling a "
        "deployment) need only a ticket. Normal changes are reviewed at the Change Advisory Board on Thursdays at"
        " 14:00 CET; submit them by Wednesday noon. Emergency changes can be approved by the incident commander "
        "during an incident and must be reviewed at the next CAB. Every change ticket needs a rollback plan and a"
        " named owner who is reachable while the change runs.",
    ),
    (
        "it-0026",
        "Alert hygiene and noisy alert review",
        "Every alert must be actionable and link a runbook. Each month the SRE guild reviews the Beacon report of"
        " alerts that fired more than 20 times without an action and either fixes the threshold, converts the "
        "alert to a ticket-only notification or deletes it. Engineers can label an alert 'noisy' from the Beacon "
        "app during their shift. Alerts without a runbook link are rejected by the alert linting check in CI.",
    ),
    (
        "it-0027",
        "Runbook: RedisEvictionsHigh",
        "This runbook belongs to the SRE alert catalogue for the Relay platform. When Beacon pages you for this "
        "alert, acknowledge within 5 minutes, open the Grafana dashboard linked in the alert and post a short "
        "note in #incidents. If customers are affected for more than 15 minutes, declare an incident with "
        "/foghorn declare. Alert details follow. Fires when the relay-cache cluster evicts more than 5,000 keys "
        "per second. Impact: API responses slow down and the database suddenly receives far more reads, because "
        "cached objects are fetched again. Steps: check whether a deploy changed key TTLs and roll it back if so."
        " Otherwise add a shard with the redis-cluster scale job, which takes about 15 minutes. Do not flush the "
        "cache during business hours: the cold-start read load has taken the database down before.",
    ),
    (
        "it-0028",
        "Tidepool staging environment",
        "Tidepool is the shared staging environment at tidepool.quaystone.internal, reachable through Gatehouse. "
        "Every merge to main deploys there automatically. Its database is restored from an anonymised production "
        "snapshot every Sunday night at 02:00 CET, so data you created during the week disappears on Monday. If "
        "you need fresher data for a test, request an ad hoc restore in #tidepool; it takes about 40 minutes and "
        "blocks other deploys while it runs. Never copy raw production data into Tidepool.",
    ),
    (
        "it-0029",
        "Deploy freeze calendar",
        "Production deploys are frozen during the last five working days of each quarter, from 20 December to 2 "
        "January, and during the Kestrel drill week. Only emergency changes approved by the incident commander go"
        " out during a freeze. The freeze calendar is published in the #deploys channel topic and in the shared "
        "Google calendar 'Deploy freezes'. The deploy pipeline checks the calendar and blocks releases "
        "automatically unless an override label is set.",
    ),
    (
        "it-0030",
        "Postmortems",
        "Every SEV1 and SEV2 incident gets a blameless postmortem within five working days. The incident owner "
        "writes it from the template in Google Docs: summary, customer impact, timeline, contributing factors, "
        "what went well, and action items with owners and due dates. The review meeting is open to everyone. "
        "Action items are tracked in Jira with the label postmortem and reviewed monthly by the engineering "
        "leads.",
    ),
    (
        "it-0031",
        "Slow laptop checklist",
        "Before opening a ticket for a sluggish laptop, try these steps. Restart the machine: many issues "
        "disappear after a restart, and Mooring updates install at reboot. Check free disk space; below 10 "
        "percent the system slows down. Quit browser tabs you do not need, especially dashboards that refresh "
        "constantly. Check Activity Monitor or Task Manager for a process using a full CPU core. If the laptop is"
        " older than three years, it may be due for replacement.",
    ),
    (
        "it-0032",
        "Operating system updates",
        "Mooring enforces operating system updates on managed laptops. Once Apple or Microsoft publishes a "
        "security update, you have 14 days to install it. During that window you get a daily reminder; after it, "
        "Mooring shows a countdown and restarts the laptop at 18:00 local time. Devices more than 30 days behind "
        "fail the Gatehouse posture check and cannot connect to internal services until they are updated. Major "
        "version upgrades are approved by IT about four weeks after release.",
    ),
    (
        "it-0033",
        "Production access through Jetty",
        "Engineers reach production hosts only through Jetty, the SSH bastion. Jetty issues short-lived SSH "
        "certificates valid for 8 hours after you authenticate with Keystone and a hardware key. Access is "
        "granted per environment via Sextant groups (prod-readonly, prod-operator). Every session is recorded. "
        "Direct SSH keys on hosts are removed by configuration management every hour, so adding your key to "
        "authorized_keys will not work.",
    ),
    (
        "it-0035",
        "Visiting the Leeds office",
        "The Leeds office is on the fourth floor of Wharf House, 12 Canal Street, five minutes from the station. "
        "Reception is open from 08:00 to 18:00; outside those hours your badge opens the side entrance. Visitors "
        "must be registered in the visitor app the day before, so their badge is ready, and must be accompanied "
        "at all times. Lunch is provided on Tuesdays and Thursdays, the anchor days, so sign up in #leeds-office "
        "by 10:00. There are four bike racks and no car parking; use the public car park on Dock Street. Quiet "
        "rooms on the west side are for focused work, not calls. Guests can use the QS-Guest wireless network. "
        "Its passphrase changes every Monday and is shown on the reception screens and in the visitor app.",
    ),
    (
        "it-0037",
        "SRE team handbook",
        "The SRE team looks after the platform that Relay runs on: Kubernetes clusters, databases, queues, "
        "observability and the deploy pipeline. We plan in two-week cycles and keep 30 percent of capacity for "
        "interrupt work and toil reduction. Stand-up is at 09:30 CET, written in #sre-standup on Fridays. New "
        "members shadow two rotations before joining Beacon. Requests from other teams go through the "
        "#sre-requests form, never direct messages, so that they are visible and prioritised. We write a design "
        "note for every change that affects more than one team. The weekly on-call handover is on Tuesdays at "
        "10:00 CET in #sre-oncall. The outgoing primary posts open alerts and ongoing incidents, and the incoming"
        " primary confirms.",
    ),
    (
        "it-0039",
        "Runbook: PostgresReplicationLagHigh",
        "This runbook belongs to the SRE alert catalogue for the Relay platform. When Beacon pages you for this "
        "alert, acknowledge within 5 minutes, open the Grafana dashboard linked in the alert and post a short "
        "note in #incidents. If customers are affected for more than 15 minutes, declare an incident with "
        "/foghorn declare. Alert details follow. Fires when a relay-core replica is more than 100 MB behind the "
        "primary. Impact: dashboard lists and exports read from replicas and show stale data. Steps: check for a "
        "long-running transaction on the primary in pg_stat_activity and cancel it if it is a report query. Check"
        " replica disk IO in Grafana. If one replica stays behind for 30 minutes, remove it from the PgBouncer "
        "read pool and rebuild it with patronictl reinit.",
    ),
    (
        "it-0040",
        "Runbook: CarrierPollingErrorsHigh",
        "This runbook belongs to the SRE alert catalogue for the Relay platform. When Beacon pages you for this "
        "alert, acknowledge within 5 minutes, open the Grafana dashboard linked in the alert and post a short "
        "note in #incidents. If customers are affected for more than 15 minutes, declare an incident with "
        "/foghorn declare. Alert details follow. Fires when more than 20 percent of polls to one carrier's "
        "tracking API fail for 15 minutes. Impact: shipments of that carrier stop receiving new tracking events. "
        "Steps: check the carrier's status page and the error codes in the carrier-poller logs. Expired carrier "
        "credentials show up as 401s; rotate them in Vault under carriers/NAME. If the carrier is down, set the "
        "carrier to degraded in the admin console so support can answer tickets.",
    ),
    (
        "it-0041",
        "Runbook: PodCrashLooping",
        "This runbook belongs to the SRE alert catalogue for the Relay platform. When Beacon pages you for this "
        "alert, acknowledge within 5 minutes, open the Grafana dashboard linked in the alert and post a short "
        "note in #incidents. If customers are affected for more than 15 minutes, declare an incident with "
        "/foghorn declare. Alert details follow. Fires when any pod in the relay namespaces restarts more than "
        "five times in 10 minutes. Impact depends on the service; check the owning team in the service catalogue."
        " Steps: read the last logs with 'kubectl logs --previous'. Out-of-memory kills appear as exit code 137; "
        "raise the memory limit only after checking for a leak. If the crash started with a deploy, roll back "
        "with the deploy pipeline's rollback button.",
    ),
    (
        "it-0042",
        "Runbook: NodeDiskPressure",
        "This runbook belongs to the SRE alert catalogue for the Relay platform. When Beacon pages you for this "
        "alert, acknowledge within 5 minutes, open the Grafana dashboard linked in the alert and post a short "
        "note in #incidents. If customers are affected for more than 15 minutes, declare an incident with "
        "/foghorn declare. Alert details follow. Fires when a Kubernetes node reports disk pressure. Impact: the "
        "kubelet evicts pods from the node, which can cascade to other nodes. Steps: cordon the node, check "
        "container image and log usage with crictl, and prune unused images. If the node's root volume is below "
        "100 GB, it belongs to an old node group; drain it and let the cluster autoscaler replace it with the "
        "current node template.",
    ),
]
