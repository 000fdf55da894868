"""HR policy pages of the Quaystone Labs knowledge base (fictional; written for this project, CC0)."""

from __future__ import annotations

DOCS: list[tuple[str, str, str]] = [
    (
        "hr-0001",
        "Annual leave entitlement",
        "Annual leave depends on your contract country. United Kingdom: 27 days plus bank holidays. Germany: 30 "
        "days plus public holidays. United States: 20 days of PTO plus 11 company holidays. Singapore: 21 days "
        "plus gazetted public holidays. Part-time colleagues get a pro-rated allowance. Entitlement grows by one "
        "day after three and after five years of service. You may carry up to 5 unused days into the next year; "
        "carried days must be used by 31 March or they lapse, unless you could not take them because of parental "
        "or sick leave.",
    ),
    (
        "hr-0002",
        "Harbor self-service basics",
        "Harbor is the HR system for everything about your employment record. Keep your personal details current "
        "there: home address, bank account for payroll, emergency contact and working location, which affects tax"
        " and insurance. Payslips appear in Harbor on the 23rd of each month and stay available after you leave. "
        "Letters such as proof of employment for a landlord or a visa application can be generated yourself under"
        " Documents and are signed automatically. If something in Harbor looks wrong, for example a missing "
        "allowance on your payslip, open a case under Help so that the People team can trace it; please do not "
        "email payroll directly. The mobile app offers the same functions except documents. Managers use Harbor "
        "to approve requests, record probation reviews and see their team's calendar. Your balance of leave days "
        "still available this year is shown at the top of the Time off page. It includes carried-over days and "
        "any time off in lieu.",
    ),
    (
        "hr-0003",
        "Illness absence reporting",
        "If illness stops you from doing your job, tell your manager directly (message or call) before 10:00 on "
        "the first day and record the absence in Harbor under the absence type for illness. For up to seven "
        "calendar days you self-certify. From the eighth day you need a doctor's note (UK fit note, German "
        "Arbeitsunfaehigkeitsbescheinigung, Singapore MC). In Germany, a certificate is required from the fourth "
        "day. Illness absence does not reduce your annual leave, and if you fall ill during a holiday you can "
        "convert those days with a note.",
    ),
    (
        "hr-0004",
        "Parental leave for the birth parent",
        "The birth parent receives 26 weeks of leave at full salary, followed by up to 26 further weeks of unpaid"
        " or statutory-paid leave depending on the country. Leave may start up to 11 weeks before the expected "
        "week of childbirth. Tell the People team at least 15 weeks before the due date using the Harbor form "
        "'Family leave'. During leave you keep accruing annual leave and your pension contributions continue. Up "
        "to 10 keeping-in-touch days can be worked and are paid on top.",
    ),
    (
        "hr-0005",
        "Partner leave",
        "The partner of a birth parent, including a same-sex partner, is entitled to 6 weeks of partner leave at "
        "full salary. It can be taken in up to three blocks of at least one week within the first 12 months after"
        " the birth or adoption placement. Request it in Harbor with the form 'Family leave' at least four weeks "
        "before the first block, attaching the expected due date. Partner leave is on top of annual leave, "
        "statutory paternity pay is offset against salary, and the Germany Elternzeit rules still apply on top.",
    ),
    (
        "hr-0006",
        "Adoption and surrogacy leave",
        "Colleagues who adopt a child or become parents through surrogacy receive the same leave as birth "
        "parents: the primary carer gets 26 weeks at full salary and the second carer gets 6 weeks of partner "
        "leave. Leave can begin up to two weeks before the placement date. You are also entitled to paid time off"
        " for up to five pre-adoption appointments. Use the Harbor form 'Family leave' and attach the matching "
        "certificate or the parental order application.",
    ),
    (
        "hr-0007",
        "Expense policy: global principles",
        "These principles apply in every country; regional pages add the local limits. Spend company money as if "
        "it were your own and choose the cheaper option when quality is similar. Submit every claim in Tally "
        "within 60 days of the purchase, with a photo of the itemised receipt for anything over EUR 25 or the "
        "local equivalent; smaller amounts need only a description. Tally shows the warning TL-22 when the "
        "receipt total differs from the claimed amount; correct the amount or add a note. Alcohol, fines, "
        "upgrades and personal entertainment are never reimbursed. Claims are paid with the next monthly payroll.",
    ),
    (
        "hr-0008",
        "Expense policy: UK",
        "This page adds local rules to the global expense principles for employees of Quaystone Labs Ltd. Meals "
        "while travelling: up to GBP 45 per day with receipts. Rail: standard class, first class only for "
        "journeys over three hours booked at least a week ahead. Taxis are fine after 21:00 or when carrying "
        "equipment. Claims are paid in GBP with the monthly payroll on the 25th. Hotels: up to GBP 160 per night,"
        " GBP 210 in London, including breakfast. Business use of a private car is reimbursed at 45p per mile for"
        " the first 10,000 miles in the tax year and 25p per mile after that; log each trip in Tally with the "
        "start and end postcode.",
    ),
    (
        "hr-0009",
        "Expense policy: US",
        "This page adds local rules to the global expense principles for employees of Quaystone Labs Inc. Meals "
        "while travelling: up to USD 75 per day. Domestic flights are economy; premium economy is allowed for "
        "flights over six hours. Tips up to 20 percent are reimbursable. Claims are paid by direct deposit with "
        "the semi-monthly payroll. Hotels: up to USD 250 per night, USD 350 in New York and San Francisco. "
        "Business use of a private car is reimbursed at the current IRS rate per mile; log each trip in Tally "
        "with the start and end address.",
    ),
    (
        "hr-0010",
        "Expense policy: DE",
        "This page adds local rules to the global expense principles for employees of Quaystone Labs GmbH. Meal "
        "allowances follow the statutory Verpflegungsmehraufwand rates: EUR 14 for trips over eight hours and EUR"
        " 28 for full days, reduced when a host or the hotel provides meals. Rail travel is second class, first "
        "class for trips over four hours; a BahnCard 50 is reimbursed if it pays for itself within the year. "
        "Claims are paid with the monthly payroll, and receipts are kept for ten years for the tax office, which "
        "Tally does for you. Business use of a private car is reimbursed at EUR 0.30 per kilometre. Hotels: up to"
        " EUR 150 per night, breakfast excluded, and up to EUR 190 per night in Munich, Frankfurt and Hamburg.",
    ),
    (
        "hr-0011",
        "Expense policy: SG",
        "This page adds local rules to the global expense principles for employees of Quaystone Labs Pte Ltd. "
        "Meals while travelling: up to SGD 80 per day. Flights: economy for trips under eight hours, premium "
        "economy above. Grab rides are reimbursable for business travel; personal commutes are not. Claims are "
        "paid in SGD with the monthly payroll. Hotels: up to SGD 320 per night in Singapore and the local "
        "equivalent of USD 220 elsewhere in Asia. Business use of a private car is rare here and is reimbursed at"
        " SGD 0.60 per kilometre.",
    ),
    (
        "hr-0012",
        "Booking business travel",
        "Book flights, trains and hotels through Tally Travel so your trip is covered by our travel insurance and"
        " duty-of-care tracking. Trips need manager approval before booking; Tally Travel routes the request "
        "automatically. Book at least 14 days ahead where possible. The regional expense pages set the hotel and "
        "class limits, and Tally Travel shows in-policy options in green. Trips to countries on the high-risk "
        "list also need security approval and a loaner laptop.",
    ),
    (
        "hr-0013",
        "Client entertainment and gifts",
        "Client meals are reimbursable up to EUR 90 per person including the Quaystone attendees, with the client"
        " name and purpose noted in Tally. You may accept gifts worth up to EUR 50; anything above must be "
        "declared in the gifts register and may need to be returned. Never offer gifts or hospitality to public "
        "officials without approval from Legal. Entertainment during a contract negotiation needs prior approval "
        "from your director.",
    ),
    (
        "hr-0014",
        "Your first week at Quaystone",
        "Welcome aboard. On day one you collect your laptop (or it arrives at home), set up your Keystone account"
        " with the one-time link in your personal email, and meet your onboarding buddy. Days two and three are "
        "the company induction: product, customers, security basics and how we work. By Friday you should have "
        "had a 1:1 with your manager to agree your 30-60-90 day goals. Your Harbor profile, payroll details and "
        "emergency contact must be completed in the first week.",
    ),
    (
        "hr-0015",
        "Onboarding checklist for managers",
        "Before a new hire starts: request their laptop in Lantern at least ten working days ahead, pick an "
        "onboarding buddy, add them to team channels and calendars, and request access groups in Sextant. In week"
        " one, hold a welcome 1:1 and agree 30-60-90 day goals. At the end of month one, check in on the buddy "
        "pairing. At three months, hold the probation mid-point review and record it in Harbor.",
    ),
    (
        "hr-0016",
        "Probation period",
        "New employees have a probation period of six months (three months in Singapore). The manager holds a "
        "mid-point review at three months and a final review before the end date, both recorded in Harbor. "
        "Probation can be extended once by up to three months if goals are not yet met. During probation, the "
        "notice period is two weeks on either side, or the statutory minimum if longer.",
    ),
    (
        "hr-0017",
        "Hybrid working",
        "Quaystone is hybrid. Teams near an office agree two anchor days per week when everyone comes in; the "
        "other days you can work where you are most productive. Fully remote contracts exist for roles hired as "
        "remote. Keep your working location in Harbor up to date because it affects payroll, tax and insurance. "
        "Office desks are unassigned; book one in the Harbor desk planner if you need a monitor.",
    ),
    (
        "hr-0018",
        "XBE assessments",
        "An XBE (cross-border employment) assessment is mandatory before any employee performs duties outside "
        "their contractual jurisdiction for more than 10 consecutive business days or 20 days per calendar year. "
        "Tax & Mobility review the destination for permanent establishment exposure, social security coordination"
        " (A1 certificates within the EEA) and immigration permissions. File the XBE form in Harbor at least 30 "
        "days before departure. Without a positive XBE outcome the arrangement is not authorised and the "
        "employment contract terms prevail.",
    ),
    (
        "hr-0019",
        "Outside employment (HRP-17)",
        "Policy HRP-17 covers paid or unpaid activities outside your Quaystone role, such as a second job, "
        "consulting, board seats or a side business. You must declare them in Harbor before you start. Approval "
        "is normally given unless the activity competes with Quaystone, uses company time or equipment, or "
        "creates a conflict with customers or suppliers. Open-source contributions and volunteering do not need a"
        " declaration unless they relate to logistics tracking. HRP-17 was last revised in January 2024.",
    ),
    (
        "hr-0020",
        "Compass performance reviews",
        "Compass is our review cycle, held twice a year in April and October. You write a short self-reflection, "
        "choose two peers for feedback, and your manager writes a summary with a rating on the four-level scale: "
        "Developing, Strong, Exceptional and Not yet meeting. Ratings are calibrated across the department before"
        " they are shared. The October cycle feeds into the annual pay review.",
    ),
    (
        "hr-0021",
        "Pay review and salary bands",
        "Salary bands are published internally for every role and level in Harbor. The annual pay review takes "
        "effect on 1 January and uses your October Compass rating and your position in the band. Promotions can "
        "happen in either Compass cycle and come with a move into the new band. If you think your pay is out of "
        "line with the band, raise it with your manager or the People partner for your department.",
    ),
    (
        "hr-0022",
        "Pension and retirement plans",
        "UK: a salary sacrifice pension with Quaystone contributing 5 percent when you contribute at least 3 "
        "percent. US: a 401(k) with a 4 percent match that vests immediately. Germany: a company pension (bAV) "
        "with a 20 percent employer top-up on your conversion. Singapore: CPF contributions at the statutory "
        "rates. You can change your contribution through Harbor once a month, and the pension providers' own "
        "portals show your balance and investment choices.",
    ),
    (
        "hr-0023",
        "Lighthouse fund",
        "Every employee has a Lighthouse fund of EUR 1,000 per calendar year (pro-rated for part-time and for "
        "joiners after July). It pays for courses, conference tickets, books and certification exams related to "
        "your role or your next role. Request it in Tally with the category 'Lighthouse' before you pay, and "
        "attach the course description. Unused money does not carry over. Travel to conferences is paid from the "
        "team travel budget, not from the fund.",
    ),
    (
        "hr-0024",
        "Employee referral bonus",
        "If you refer someone who is hired, you receive a referral bonus of EUR 2,000 (or local equivalent) after"
        " they pass three months of employment. Submit the referral through the careers page link in Harbor "
        "before the candidate applies; referrals after an application is received are not eligible. Hiring "
        "managers and recruiters cannot receive a bonus for roles they hire for. There is no limit on the number "
        "of referrals you can make.",
    ),
    (
        "hr-0025",
        "Resignation and notice periods",
        "To resign, tell your manager and confirm in writing through Harbor. Notice periods after probation are "
        "one month for most roles and three months for directors, or longer where local law requires. Your "
        "manager and the People team will agree your last working day, the handover plan and any untaken leave, "
        "which is paid out or taken before you leave. Return equipment on your last day; your accounts are "
        "disabled at 18:00 that day.",
    ),
    (
        "hr-0026",
        "Bereavement leave",
        "If someone close to you dies, you can take up to 10 days of paid bereavement leave for a partner, child "
        "or parent, and up to 5 days for other relatives or close friends. You do not need to provide evidence. "
        "Record the absence in Harbor or ask your manager to do it for you. Further time off can be agreed with "
        "your manager, and the Employee Assistance Programme offers free counselling.",
    ),
    (
        "hr-0027",
        "Home office setup allowance",
        "If you work from home at least two days a week, you can claim a one-off allowance of EUR 400 (or local "
        "equivalent) towards a desk, an ergonomic chair or lighting. Claim it in Tally under 'Home office' with "
        "receipts within six months of joining or of moving to hybrid work. IT equipment such as screens and "
        "docks is ordered separately from Lantern and does not count against the allowance.",
    ),
    (
        "hr-0028",
        "Relocation support",
        "Employees who move to another Quaystone office at the company's request receive the Pelican package: "
        "visa and immigration support, a moving allowance of up to EUR 8,000, four weeks of temporary housing and"
        " a home-finding consultant. Moves at the employee's request can receive visa support only. Relocation "
        "payments are repayable on a sliding scale if you leave within 12 months of your move.",
    ),
    (
        "hr-0029",
        "Public holidays and floating holidays",
        "Each office follows its local public holiday calendar, published in Harbor. In addition, everyone gets "
        "two floating holidays per year to use for religious or cultural festivals that are not public holidays "
        "where they live. Floating holidays are booked like annual leave and do not carry over. If you work on a "
        "public holiday because of on-call, you receive a day off in lieu.",
    ),
    (
        "hr-0030",
        "Speaking up and the Clearwater line",
        "If you see behaviour that breaks our code of conduct or the law, raise it with your manager, your People"
        " partner or Legal. If you prefer to stay anonymous, use Clearwater, the independent reporting line run "
        "by an external provider, available online and by phone in all our languages. Reports are investigated by"
        " a small panel outside your reporting line. Retaliation against anyone who speaks up in good faith is a "
        "disciplinary offence.",
    ),
    (
        "hr-0031",
        "On-call compensation and time off in lieu",
        "Engineers on the production on-call rota receive EUR 250 (or local equivalent) per week as primary and "
        "EUR 125 as secondary, paid with the next payroll. In addition, every hour worked on an incident between "
        "20:00 and 08:00 or on a weekend earns one hour of time off in lieu, to be taken within four weeks. "
        "Record incident hours in Harbor under 'On-call TOIL' with the Foghorn incident number.",
    ),
    (
        "hr-0032",
        "Jury service and civic duties",
        "If you are called for jury service, court witness duty or a public office such as a school board, you "
        "receive paid leave for the time required. Give your manager the summons as soon as you receive it and "
        "record the absence in Harbor under 'Civic duty'. Any allowance you receive from the court for loss of "
        "earnings must be declared and is deducted from salary.",
    ),
    (
        "hr-0033",
        "Mobility budget",
        "Employees based in an office location get a mobility budget of EUR 90 per month (or local equivalent) "
        "for public transport passes, bike-share subscriptions or a bike lease. Claim it monthly in Tally under "
        "'Mobility' with the receipt or pass. Unused budget does not roll over. Parking at the Munich office is "
        "limited and allocated to people with accessibility needs first. The budget is paid as a tax-free benefit"
        " where local rules allow it.",
    ),
    (
        "hr-0035",
        "Working from home: practical guide",
        "Most of us work from home some of the time, and a few habits make it easier. Agree core hours with your "
        "team and put them in your Slack profile so colleagues in other time zones know when to expect an answer."
        " Use a separate room or at least a separate corner for calls, and a headset rather than the laptop "
        "microphone. The ergonomic basics matter more at home than in the office: screen at eye height, an "
        "external keyboard and a chair with lumbar support. Take real breaks away from the screen. Lock your "
        "laptop when you leave it, even at home, and never let family members use it. If your home connection "
        "fails during an important meeting, dial in by phone with the number in the invite. Up to EUR 30 a month "
        "of your home internet bill can be claimed in Tally under Connectivity.",
    ),
    (
        "hr-0037",
        "Requesting time off",
        "Requests for annual leave, floating holidays and other planned absences go through Harbor: open Time "
        "off, choose the type and the dates, and submit. Each request names a cover person, whom Harbor suggests "
        "from your team. Your manager usually approves within two working days. For more than five consecutive "
        "days, ask at least two weeks ahead. Approved absences appear in the team calendar and set your Slack "
        "status. To cancel approved leave, withdraw the request before the first day. Illness, family leave and "
        "civic duties use their own request types.",
    ),
    (
        "hr-0038",
        "Expense policy: NL",
        "This page adds local rules to the global expense principles for employees of Quaystone Labs B.V. in "
        "Rotterdam. Meals while travelling: up to EUR 40 per day with receipts. Trains: second class on domestic "
        "and international trains, first class for trips over four hours. Claims are paid in EUR with the monthly"
        " payroll on the 24th. Hotels: up to EUR 160 per night, EUR 220 in Amsterdam, breakfast included where "
        "offered. Business use of a private car or bicycle is reimbursed at the tax-free rate of EUR 0.23 per "
        "kilometre.",
    ),
    (
        "hr-0039",
        "Travel and expenses for interview candidates",
        "Candidates invited to an on-site interview book travel through the recruiting coordinator, who uses "
        "Tally Travel on their behalf. We pay economy flights or standard rail, one hotel night up to the "
        "regional hotel limit when the journey is over three hours, and meals up to EUR 40 per day. Candidates "
        "who pay themselves send their receipts to the coordinator within 30 days and are reimbursed by bank "
        "transfer. Taxis to the office are covered. Hiring managers must not pay candidate costs on their own "
        "cards.",
    ),
    (
        "hr-0040",
        "Team events and offsite budgets",
        "Each team has an events budget of EUR 150 per person per year for team dinners, activities and "
        "celebrations, managed by the team lead in Tally. Offsites with travel are planned with the events team "
        "at least eight weeks ahead and paid from the department budget. Hotel and meal limits from the regional "
        "expense pages apply during offsites. Alcohol is reimbursable only at team events, up to a third of the "
        "bill. Keep receipts and the attendee list together in one Tally claim.",
    ),
]
