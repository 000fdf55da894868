"""Long pages added after the production index was built (fictional; written for this project, CC0).

Two pages answer their query only in their last paragraph, beyond the 256 word pieces all-MiniLM-L6-v2 reads
(planted: ``truncated``); one page buries the answering paragraph among unrelated notes (planted: ``diluted``).
"""

from __future__ import annotations

DOCS: list[tuple[str, str, str]] = [
    (
        "it-0043",
        "Leeds office: building and facilities guide",
        "The Leeds office occupies the third and fourth floors of Calder House on Wellington Street, five minutes "
        "on foot from Leeds station. The building is open from 7:00 to 20:00 on weekdays; outside those hours "
        "the front door needs your badge and the night guard signs you in. Reception on the ground floor belongs "
        "to the building, not to us: they accept parcels for Quaystone staff but cannot sign for anything that "
        "needs an ID check. Our own front desk is on the third floor next to the lifts and is staffed from 8:30 "
        "to 17:30. Desks are not assigned. Book one in the Deskbird app the day before; team areas are marked "
        "on the floor plan by the lifts, and the quiet zone on the fourth floor is for focused work without "
        "calls. Meeting rooms are named after Yorkshire rivers (Aire, Calder, Wharfe, Nidd, Ure and Swale) and "
        "are booked through the calendar like any other room. The kitchen on each floor has coffee, tea, fruit "
        "on Mondays and Thursdays, and a dishwasher that the last person to leave starts. Printers sit by the "
        "kitchens and print with your badge. Fire drills happen twice a year; the assembly point is the square "
        "in front of the station, and fire wardens wear yellow vests. First aiders are listed on the notice "
        "board by the front desk. Lost property goes to the front desk and is kept for a month. The building "
        "manager runs a monthly tenants' breakfast in the lobby that anyone may join. Parking in the building's "
        "garage is reserved for visitors with a booking and for colleagues with a blue badge; ask the front desk "
        "at least a day ahead. For deliveries of furniture or equipment, book the goods lift with the building "
        "manager. Cycling to work: a locked cage for 40 bikes is in the basement, reached by the ramp on Aire "
        "Street; your badge opens it. Next to the cage are two showers, a drying room and lockers for your "
        "towel and clothes.",
    ),
    (
        "hr-0041",
        "International relocation handbook",
        "This handbook is for colleagues who move to another Quaystone country at the company's request or "
        "through an approved internal transfer. It does not cover working from abroad for a few weeks, which is "
        "the cross-border work policy. Before you move, People Operations opens a relocation case in Harbor and "
        "assigns you a relocation partner from our provider, who is your single point of contact. Your new "
        "contract is issued by the receiving entity and signed before any booking is made. Immigration: the "
        "provider prepares the visa or work permit application and books the appointments; the company pays "
        "the government fees for you, your partner and your children. Do not resign your lease or sell your "
        "home before the permit is granted. Travel: one economy flight for you and each family member, and up "
        "to 30 days of temporary housing in the new city. Household goods: a sea shipment of up to 20 cubic "
        "metres or an air shipment of up to 500 kilograms, packed and insured by the provider; cars and "
        "alcohol are not shipped. A settling-in allowance of one month's base salary is paid with your first "
        "payroll in the new country to cover deposits, furniture and the many small costs of a move. Tax: the "
        "provider's tax adviser prepares a briefing and your departure and arrival returns for the year of the "
        "move. Language lessons for you and your partner are covered for six months. School search: the "
        "provider suggests schools and arranges visits; tuition is not covered. If you leave Quaystone "
        "within a year of the move, you repay a share of the relocation costs, reducing by a twelfth each "
        "month. Pets: the company pays for moving up to two cats or dogs, including vaccinations, the pet "
        "passport, an approved carrier crate and the flight in the hold or as cargo, booked by the provider.",
    ),
    (
        "bill-0035",
        "Team notes: March",
        "Notes from the Leeds team's Monday stand-ups in March. The office plant rota moves to the second floor "
        "and Jo waters the big fig on Fridays. The coffee machine on the third floor is being repaired; use the "
        "one by the lifts until the engineer comes back with the part. The team lunch is on the last Friday at "
        "the noodle place on Boar Lane; tell Sam about allergies by Wednesday. Sam leaves for parental leave on "
        "the 20th, and Alex covers his questions until he is back in June. The fire drill is on the 14th at "
        "11:00; take your laptop and leave the mugs. Desk moves: the finance corner moves next to the windows on "
        "the 18th, so clear your drawers the evening before. Conversion fees on refunds in a foreign currency are "
        "ours to pay, never taken off the refund. Birthdays this month: Priya on the 3rd and Tom on the 22nd; the "
        "card is at the front desk. The book club reads a detective novel set in Whitby and meets in the Aire "
        "room. The bike cage code changes on the 1st. The quiz night team needs a fifth player. Next stand-up: "
        "Monday at 9:30.",
    ),
]
