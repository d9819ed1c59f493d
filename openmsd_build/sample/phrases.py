"""Per-language phrase banks and the seeded text builders that combine them.

The sample must exercise language detection the way real papers do, so every language's
titles and abstracts are built from sentences written in that language (never machine
noise): a bank of topic noun phrases (aligned by concept index across languages, so the
Crossref subject of a paper agrees with its title), method phrases, places and sentence
templates for the usual abstract moves (background, aim, method, result, conclusion).
Templates are written so that the inserted phrases keep the grammar right: Romance and
German topics are feminine singular without article, Russian and Polish topics are given in
the genitive case that their templates require, Korean templates only use case markers that
do not depend on the final consonant.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

# Crossref-style subject categories (ASJC names, as Crossref prints them).
SUBJECTS: tuple[str, ...] = (
    "General Medicine", "Ecology", "Soil Science", "Computer Science Applications",
    "Renewable Energy, Sustainability and the Environment", "Water Science and Technology",
    "Education", "Developmental and Educational Psychology", "Psychiatry and Mental health",
    "Infectious Diseases", "Microbiology", "Oceanography", "Geography, Planning and Development",
    "Urban Studies", "Management Science and Operations Research", "Transportation",
    "Waste Management and Disposal", "Environmental Chemistry", "Global and Planetary Change",
    "Atmospheric Science", "Biochemistry", "Molecular Biology", "Structural Biology",
    "Artificial Intelligence", "Software", "Electrical and Electronic Engineering",
    "Materials Chemistry", "Energy Engineering and Power Technology",
    "Public Health, Environmental and Occupational Health", "Health Policy",
    "Linguistics and Language", "Cardiology and Cardiovascular Medicine", "Gastroenterology",
    "Economics and Econometrics", "Sociology and Political Science",
    "Pediatrics, Perinatology and Child Health", "Nursing", "Agronomy and Crop Science",
    "Physical and Theoretical Chemistry", "Condensed Matter Physics",
)

# Concept index -> subject categories. Concepts 0-11 exist in every language, 12-21 in English only.
CONCEPT_SUBJECTS: tuple[tuple[str, ...], ...] = (
    ("Pediatrics, Perinatology and Child Health", "Psychiatry and Mental health", "Nursing"),
    ("Infectious Diseases", "Microbiology", "Water Science and Technology"),
    ("Oceanography", "Geography, Planning and Development"),
    ("Water Science and Technology", "Environmental Chemistry", "Agronomy and Crop Science"),
    ("Management Science and Operations Research", "Economics and Econometrics"),
    ("Psychiatry and Mental health", "Education", "Public Health, Environmental and Occupational Health"),
    ("Ecology", "Global and Planetary Change"),
    ("Global and Planetary Change", "Sociology and Political Science"),
    ("Transportation", "Urban Studies", "Geography, Planning and Development"),
    ("Waste Management and Disposal", "Environmental Chemistry"),
    ("Education", "Developmental and Educational Psychology"),
    ("Renewable Energy, Sustainability and the Environment", "Energy Engineering and Power Technology"),
    ("Artificial Intelligence", "Computer Science Applications"),
    ("Materials Chemistry", "Renewable Energy, Sustainability and the Environment", "Condensed Matter Physics"),
    ("Structural Biology", "Biochemistry", "Molecular Biology", "Physical and Theoretical Chemistry"),
    ("Soil Science", "Microbiology", "Ecology"),
    ("Atmospheric Science", "Urban Studies"),
    ("Gastroenterology", "Microbiology", "General Medicine"),
    ("Artificial Intelligence", "Software"),
    ("Cardiology and Cardiovascular Medicine", "Public Health, Environmental and Occupational Health", "Health Policy"),
    ("Electrical and Electronic Engineering", "Energy Engineering and Power Technology"),
    ("Linguistics and Language", "Developmental and Educational Psychology"),
)


@dataclass(frozen=True)
class Bank:
    """Everything needed to write a paper in one language."""

    code: str
    script: str  # ISO 15924: Latn, Cyrl, Hans, Jpan, Kore, Arab
    topics: tuple[str, ...]
    methods: tuple[str, ...]
    places: tuple[str, ...]
    titles: tuple[str, ...]
    review_titles: tuple[str, ...]
    background: tuple[str, ...]
    aim: tuple[str, ...]
    method: tuple[str, ...]
    result: tuple[str, ...]
    conclusion: tuple[str, ...]
    # abstract, introduction, methods, results, discussion, references, keywords
    words: tuple[str, str, str, str, str, str, str]
    joiner: str = " "


BANKS: dict[str, Bank] = {}


def _bank(**kw) -> None:
    BANKS[kw["code"]] = Bank(**{k: tuple(v) if isinstance(v, list) else v for k, v in kw.items()})


_bank(
    code="en", script="Latn",
    topics=[
        "sleep quality in adolescents", "antibiotic resistance in hospital wastewater",
        "coastal sediment dynamics", "nitrate pollution of groundwater", "supply chain resilience",
        "mental health of university students", "wetland biodiversity", "climate risk perception",
        "sustainable urban mobility", "municipal solid waste management", "science teacher education",
        "green hydrogen production", "graph neural networks", "perovskite solar cells",
        "protein folding dynamics", "soil microbial communities", "urban heat islands",
        "gut microbiota composition", "deep reinforcement learning", "cardiovascular risk factors",
        "lithium-ion battery degradation", "early childhood language development",
    ],
    methods=[
        "a randomized controlled trial", "a longitudinal cohort study", "high-resolution satellite imagery",
        "a mixed-methods survey", "molecular dynamics simulations", "a systematic literature review",
        "Bayesian hierarchical models", "semi-structured interviews", "a cross-sectional design",
    ],
    places=[
        "northern Europe", "sub-Saharan Africa", "Southeast Asia", "coastal regions", "a large metropolitan area",
        "rural communities", "South America", "the Mediterranean basin",
    ],
    titles=[
        "{topic}: evidence from {method}", "The role of {topic} in {topic2}", "Assessing {topic} using {method}",
        "{topic} and {topic2}: a comparative analysis", "New insights into {topic} in {place}",
        "Understanding the effects of {topic} on {topic2} in {place}",
    ],
    review_titles=["{topic}: a systematic review and meta-analysis", "Recent advances in {topic}: a review"],
    background=[
        "{topic} has received increasing attention in recent years.",
        "Despite decades of research, the mechanisms linking {topic} and {topic2} remain poorly understood.",
        "Little is known about {topic} in {place}, where reliable data are scarce.",
        "Previous studies have reported conflicting results regarding {topic}.",
    ],
    aim=[
        "This study aimed to examine how {topic} affects {topic2}.",
        "Here we investigate {topic} and its relationship with {topic2}.",
        "The objective of this work was to quantify {topic} across {n} sites in {place}.",
    ],
    method=[
        "We used {method} involving {n} participants.",
        "Data were collected through {method} between {y1} and {y2}.",
        "Our approach combines {method} with a detailed analysis of {topic2}.",
    ],
    result=[
        "The results show a significant association between {topic} and {topic2}.",
        "We observed an increase of {p}% in the main outcome compared with the baseline.",
        "The model explained most of the variation observed in {topic2}.",
        "No significant differences were found between the two groups.",
    ],
    conclusion=[
        "These findings suggest that {topic} should be considered in future policy decisions.",
        "Our results provide a basis for further research on {topic2}.",
        "Further studies are needed to confirm these observations in larger samples.",
    ],
    words=("Abstract", "Introduction", "Methods", "Results", "Discussion", "References", "Keywords"),
)

_bank(
    code="de", script="Latn",
    topics=[
        "Schlafqualität bei Jugendlichen", "Antibiotikaresistenz in Krankenhausabwässern",
        "Dynamik küstennaher Sedimente", "Nitratbelastung des Grundwassers", "Resilienz globaler Lieferketten",
        "Gesundheit von Studierenden", "Artenvielfalt in Feuchtgebieten", "Wahrnehmung klimatischer Risiken",
        "Mobilität in Großstädten", "Entsorgung von Siedlungsabfällen", "Ausbildung von Lehrkräften",
        "Herstellung von grünem Wasserstoff",
    ],
    methods=[
        "einer randomisierten kontrollierten Studie", "einer Längsschnittstudie", "hochauflösender Satellitenbilder",
        "einer schriftlichen Befragung", "molekulardynamischer Simulationen", "einer systematischen Literaturrecherche",
    ],
    places=["Deutschland", "Österreich", "der Schweiz", "Norddeutschland", "ländlichen Regionen Bayerns"],
    titles=[
        "Die {topic} im Wandel: Ergebnisse {method}", "Zur Bedeutung der {topic} für die {topic2}",
        "Untersuchungen zur {topic} in {place}", "Die {topic} und die {topic2} im Vergleich",
    ],
    review_titles=["Die {topic}: ein systematischer Überblick", "Aktuelle Entwicklungen in der Forschung zur {topic}"],
    background=[
        "Die {topic} hat in den letzten Jahren zunehmend an Bedeutung gewonnen.",
        "Trotz zahlreicher Arbeiten ist der Zusammenhang zwischen der {topic} und der {topic2} bisher nur unzureichend verstanden.",
        "Über die {topic} in {place} ist bislang wenig bekannt.",
    ],
    aim=[
        "Ziel der vorliegenden Arbeit war es, den Einfluss der {topic} auf die {topic2} zu untersuchen.",
        "In dieser Studie wird die {topic} im Zusammenhang mit der {topic2} betrachtet.",
        "Ziel war es, die {topic} an {n} Standorten in {place} quantitativ zu erfassen.",
    ],
    method=[
        "Grundlage der Untersuchung sind die Daten {method} mit insgesamt {n} Teilnehmenden.",
        "Die Daten wurden zwischen {y1} und {y2} im Rahmen {method} erhoben.",
        "Der gewählte Ansatz verbindet die Auswertung {method} mit einer genauen Analyse der {topic2}.",
    ],
    result=[
        "Die Ergebnisse zeigen einen deutlichen Zusammenhang zwischen der {topic} und der {topic2}.",
        "Im Vergleich zum Ausgangswert stieg der wichtigste Indikator um {p} Prozent.",
        "Das Modell erklärt einen großen Teil der beobachteten Unterschiede.",
        "Zwischen den beiden Gruppen wurden keine signifikanten Unterschiede festgestellt.",
    ],
    conclusion=[
        "Die Befunde sprechen dafür, die {topic} bei künftigen Entscheidungen stärker zu berücksichtigen.",
        "Die Ergebnisse bilden eine Grundlage für weitere Forschung zur {topic2}.",
        "Weitere Studien mit größeren Stichproben sind notwendig, um diese Beobachtungen zu bestätigen.",
    ],
    words=("Zusammenfassung", "Einleitung", "Methoden", "Ergebnisse", "Diskussion", "Literatur", "Schlüsselwörter"),
)

_bank(
    code="fr", script="Latn",
    topics=[
        "qualité du sommeil chez les adolescents", "résistance aux antibiotiques dans les eaux usées hospitalières",
        "dynamique des sédiments côtiers", "pollution des nappes phréatiques par les nitrates",
        "résilience des chaînes d'approvisionnement", "santé mentale des étudiants", "biodiversité des zones humides",
        "perception du risque climatique", "mobilité urbaine durable", "gestion des déchets ménagers",
        "formation des enseignants de sciences", "production d'hydrogène vert",
    ],
    methods=[
        "un essai contrôlé randomisé", "une étude de cohorte longitudinale", "des images satellitaires à haute résolution",
        "une enquête par questionnaire", "des simulations de dynamique moléculaire", "une revue systématique de la littérature",
    ],
    places=["en France", "au Québec", "en Afrique de l'Ouest", "dans le bassin méditerranéen", "en milieu rural"],
    titles=[
        "La {topic} : une analyse fondée sur {method}", "Le rôle de la {topic} dans la {topic2}",
        "Évaluation de la {topic} {place}", "La {topic} et la {topic2} : une approche comparative",
    ],
    review_titles=["La {topic} : une revue systématique", "État des connaissances sur la {topic}"],
    background=[
        "La {topic} suscite un intérêt croissant depuis quelques années.",
        "Malgré de nombreux travaux, les liens entre la {topic} et la {topic2} restent mal compris.",
        "On connaît encore peu de choses sur la {topic} {place}.",
    ],
    aim=[
        "Cette étude vise à analyser l'effet de la {topic} sur la {topic2}.",
        "Dans cet article, nous examinons la {topic} et sa relation avec la {topic2}.",
        "L'objectif de ce travail était de mesurer la {topic} dans {n} sites {place}.",
    ],
    method=[
        "Nous avons réalisé {method} auprès de {n} participants.",
        "Les données ont été recueillies entre {y1} et {y2} grâce à {method}.",
        "Notre démarche associe {method} à une analyse détaillée de la {topic2}.",
    ],
    result=[
        "Les résultats montrent une association significative entre la {topic} et la {topic2}.",
        "Nous observons une hausse de {p} % de l'indicateur principal par rapport à la situation initiale.",
        "Le modèle explique la plus grande partie de la variabilité observée.",
        "Aucune différence significative n'a été observée entre les deux groupes.",
    ],
    conclusion=[
        "Ces résultats suggèrent que la {topic} doit être prise en compte dans les décisions futures.",
        "Nos résultats ouvrent la voie à de nouvelles recherches sur la {topic2}.",
        "D'autres études sur des échantillons plus larges sont nécessaires pour confirmer ces observations.",
    ],
    words=("Résumé", "Introduction", "Méthodes", "Résultats", "Discussion", "Références", "Mots-clés"),
)

_bank(
    code="es", script="Latn",
    topics=[
        "calidad del sueño en adolescentes", "resistencia a los antibióticos en aguas residuales hospitalarias",
        "dinámica de los sedimentos costeros", "contaminación de las aguas subterráneas por nitratos",
        "resiliencia de las cadenas de suministro", "salud mental de los estudiantes universitarios",
        "biodiversidad de los humedales", "percepción del riesgo climático", "movilidad urbana sostenible",
        "gestión de los residuos sólidos urbanos", "formación del profesorado de ciencias",
        "producción de hidrógeno verde",
    ],
    methods=[
        "un ensayo controlado aleatorizado", "un estudio de cohorte longitudinal", "imágenes satelitales de alta resolución",
        "una encuesta con métodos mixtos", "simulaciones de dinámica molecular", "una revisión sistemática de la literatura",
    ],
    places=["en España", "en México", "en Colombia", "en la región andina", "en zonas rurales de Argentina"],
    titles=[
        "La {topic}: evidencias a partir de {method}", "El papel de la {topic} en la {topic2}",
        "Evaluación de la {topic} {place}", "La {topic} y la {topic2}: un análisis comparativo",
    ],
    review_titles=["La {topic}: una revisión sistemática", "Avances recientes en el estudio de la {topic}"],
    background=[
        "La {topic} ha recibido una atención creciente en los últimos años.",
        "A pesar de las numerosas investigaciones, la relación entre la {topic} y la {topic2} sigue sin comprenderse bien.",
        "Se sabe muy poco sobre la {topic} {place}.",
    ],
    aim=[
        "El objetivo de este estudio fue analizar el efecto de la {topic} sobre la {topic2}.",
        "En este trabajo se examina la {topic} y su relación con la {topic2}.",
        "Se pretendía cuantificar la {topic} en {n} localidades {place}.",
    ],
    method=[
        "Se llevó a cabo {method} con la participación de {n} personas.",
        "Los datos se recogieron entre {y1} y {y2} mediante {method}.",
        "Nuestro enfoque combina {method} con un análisis detallado de la {topic2}.",
    ],
    result=[
        "Los resultados muestran una asociación significativa entre la {topic} y la {topic2}.",
        "Se observó un aumento del {p} % en el indicador principal con respecto a la línea de base.",
        "El modelo explica la mayor parte de la variación observada.",
        "No se encontraron diferencias significativas entre los dos grupos.",
    ],
    conclusion=[
        "Estos hallazgos sugieren que la {topic} debe tenerse en cuenta en las decisiones futuras.",
        "Nuestros resultados sientan las bases para nuevas investigaciones sobre la {topic2}.",
        "Se necesitan más estudios con muestras más amplias para confirmar estas observaciones.",
    ],
    words=("Resumen", "Introducción", "Métodos", "Resultados", "Discusión", "Referencias", "Palabras clave"),
)

_bank(
    code="pt", script="Latn",
    topics=[
        "qualidade do sono em adolescentes", "resistência aos antibióticos em efluentes hospitalares",
        "dinâmica dos sedimentos costeiros", "contaminação das águas subterrâneas por nitratos",
        "resiliência das cadeias de suprimentos", "saúde mental de estudantes universitários",
        "biodiversidade das áreas úmidas", "percepção do risco climático", "mobilidade urbana sustentável",
        "gestão de resíduos sólidos urbanos", "formação de professores de ciências", "produção de hidrogênio verde",
    ],
    methods=[
        "um ensaio clínico randomizado", "um estudo de coorte longitudinal", "imagens de satélite de alta resolução",
        "um questionário com métodos mistos", "simulações de dinâmica molecular", "uma revisão sistemática da literatura",
    ],
    places=["no Brasil", "em Portugal", "na região Nordeste", "no estado de São Paulo", "em municípios do interior"],
    titles=[
        "A {topic}: evidências a partir de {method}", "O papel da {topic} na {topic2}",
        "Avaliação da {topic} {place}", "A {topic} e a {topic2}: uma análise comparativa",
    ],
    review_titles=["A {topic}: uma revisão sistemática", "Avanços recentes no estudo da {topic}"],
    background=[
        "A {topic} tem recebido crescente atenção nos últimos anos.",
        "Apesar de muitas pesquisas, a relação entre a {topic} e a {topic2} ainda não é bem compreendida.",
        "Pouco se sabe sobre a {topic} {place}.",
    ],
    aim=[
        "O objetivo deste estudo foi analisar o efeito da {topic} sobre a {topic2}.",
        "Neste trabalho, investigamos a {topic} e sua relação com a {topic2}.",
        "Buscou-se quantificar a {topic} em {n} locais {place}.",
    ],
    method=[
        "Foi realizado {method} com a participação de {n} pessoas.",
        "Os dados foram coletados entre {y1} e {y2} por meio de {method}.",
        "Nossa abordagem combina {method} com uma análise detalhada da {topic2}.",
    ],
    result=[
        "Os resultados mostram uma associação significativa entre a {topic} e a {topic2}.",
        "Observou-se um aumento de {p}% no indicador principal em relação à linha de base.",
        "O modelo explicou a maior parte da variação observada.",
        "Não foram encontradas diferenças significativas entre os dois grupos.",
    ],
    conclusion=[
        "Esses achados sugerem que a {topic} deve ser considerada nas decisões futuras.",
        "Nossos resultados fornecem uma base para novas pesquisas sobre a {topic2}.",
        "São necessários mais estudos com amostras maiores para confirmar essas observações.",
    ],
    words=("Resumo", "Introdução", "Métodos", "Resultados", "Discussão", "Referências", "Palavras-chave"),
)

_bank(
    code="it", script="Latn",
    topics=[
        "qualità del sonno negli adolescenti", "resistenza agli antibiotici nelle acque reflue ospedaliere",
        "dinamica dei sedimenti costieri", "contaminazione delle acque sotterranee da nitrati",
        "resilienza delle catene di approvvigionamento", "salute mentale degli studenti universitari",
        "biodiversità delle zone umide", "percezione del rischio climatico", "mobilità urbana sostenibile",
        "gestione dei rifiuti urbani", "formazione degli insegnanti di scienze", "produzione di idrogeno verde",
    ],
    methods=[
        "uno studio controllato randomizzato", "uno studio di coorte longitudinale", "immagini satellitari ad alta risoluzione",
        "un questionario a metodi misti", "simulazioni di dinamica molecolare", "una revisione sistematica della letteratura",
    ],
    places=["in Italia", "nel Mezzogiorno", "in Lombardia", "nelle aree interne", "nel bacino del Mediterraneo"],
    titles=[
        "La {topic}: evidenze da {method}", "Il ruolo della {topic} nella {topic2}",
        "Valutazione della {topic} {place}", "La {topic} e la {topic2}: un'analisi comparativa",
    ],
    review_titles=["La {topic}: una revisione sistematica", "Progressi recenti nello studio della {topic}"],
    background=[
        "La {topic} ha ricevuto una crescente attenzione negli ultimi anni.",
        "Nonostante numerose ricerche, il rapporto tra la {topic} e la {topic2} resta poco chiaro.",
        "Si sa ancora poco sulla {topic} {place}.",
    ],
    aim=[
        "Lo scopo di questo studio era analizzare l'effetto della {topic} sulla {topic2}.",
        "In questo lavoro esaminiamo la {topic} e il suo legame con la {topic2}.",
        "L'obiettivo era quantificare la {topic} in {n} siti {place}.",
    ],
    method=[
        "È stato condotto {method} che ha coinvolto {n} partecipanti.",
        "I dati sono stati raccolti tra il {y1} e il {y2} attraverso {method}.",
        "Il nostro approccio combina {method} con un'analisi dettagliata della {topic2}.",
    ],
    result=[
        "I risultati mostrano un'associazione significativa tra la {topic} e la {topic2}.",
        "Abbiamo osservato un aumento del {p}% dell'indicatore principale rispetto ai valori iniziali.",
        "Il modello spiega gran parte della variabilità osservata.",
        "Non sono state riscontrate differenze significative tra i due gruppi.",
    ],
    conclusion=[
        "Questi risultati suggeriscono che la {topic} dovrebbe essere considerata nelle decisioni future.",
        "I nostri risultati costituiscono una base per ulteriori ricerche sulla {topic2}.",
        "Sono necessari ulteriori studi su campioni più ampi per confermare queste osservazioni.",
    ],
    words=("Riassunto", "Introduzione", "Metodi", "Risultati", "Discussione", "Bibliografia", "Parole chiave"),
)

_bank(
    code="nl", script="Latn",
    topics=[
        "slaapkwaliteit bij adolescenten", "antibioticaresistentie in ziekenhuisafvalwater",
        "dynamiek van kustsedimenten", "nitraatvervuiling van het grondwater", "veerkracht van toeleveringsketens",
        "mentale gezondheid van studenten", "biodiversiteit van moerasgebieden", "perceptie van klimaatrisico's",
        "duurzame stedelijke mobiliteit", "verwerking van huishoudelijk afval", "opleiding van leraren",
        "productie van groene waterstof",
    ],
    methods=[
        "een gerandomiseerde gecontroleerde studie", "een longitudinaal cohortonderzoek", "satellietbeelden met hoge resolutie",
        "een vragenlijstonderzoek", "moleculaire dynamicasimulaties", "een systematisch literatuuronderzoek",
    ],
    places=["in Nederland", "in Vlaanderen", "in de Randstad", "in het noorden van het land", "in landelijke gemeenten"],
    titles=[
        "De {topic}: resultaten van {method}", "De rol van de {topic} bij de {topic2}",
        "Een onderzoek naar de {topic} {place}", "De {topic} en de {topic2}: een vergelijkende analyse",
    ],
    review_titles=["De {topic}: een systematisch overzicht", "Recente ontwikkelingen in het onderzoek naar de {topic}"],
    background=[
        "De {topic} krijgt de laatste jaren steeds meer aandacht.",
        "Ondanks veel onderzoek is het verband tussen de {topic} en de {topic2} nog niet goed begrepen.",
        "Er is weinig bekend over de {topic} {place}.",
    ],
    aim=[
        "Het doel van dit onderzoek was om het effect van de {topic} op de {topic2} te onderzoeken.",
        "In dit artikel bekijken we de {topic} en de samenhang met de {topic2}.",
        "Het doel was om de {topic} op {n} locaties {place} te meten.",
    ],
    method=[
        "We hebben {method} uitgevoerd met in totaal {n} deelnemers.",
        "De gegevens werden tussen {y1} en {y2} verzameld met behulp van {method}.",
        "Onze aanpak combineert {method} met een gedetailleerde analyse van de {topic2}.",
    ],
    result=[
        "De resultaten laten een duidelijk verband zien tussen de {topic} en de {topic2}.",
        "De belangrijkste uitkomstmaat steeg met {p} procent ten opzichte van de uitgangswaarde.",
        "Het model verklaart het grootste deel van de waargenomen variatie.",
        "Er werden geen significante verschillen tussen de twee groepen gevonden.",
    ],
    conclusion=[
        "Deze bevindingen suggereren dat er bij toekomstige beslissingen meer rekening moet worden gehouden met de {topic}.",
        "Onze resultaten vormen een basis voor verder onderzoek naar de {topic2}.",
        "Er is meer onderzoek met grotere steekproeven nodig om deze waarnemingen te bevestigen.",
    ],
    words=("Samenvatting", "Inleiding", "Methoden", "Resultaten", "Discussie", "Literatuur", "Trefwoorden"),
)

_bank(
    code="id", script="Latn",
    topics=[
        "kualitas tidur remaja", "resistensi antibiotik pada limbah cair rumah sakit", "dinamika sedimen pesisir",
        "pencemaran nitrat pada air tanah", "ketahanan rantai pasok", "kesehatan mental mahasiswa",
        "keanekaragaman hayati lahan basah", "persepsi risiko iklim", "mobilitas perkotaan berkelanjutan",
        "pengelolaan sampah rumah tangga", "pendidikan calon guru sains", "produksi hidrogen hijau",
    ],
    methods=[
        "uji klinis acak terkontrol", "studi kohort longitudinal", "citra satelit resolusi tinggi",
        "survei dengan metode campuran", "simulasi dinamika molekuler", "tinjauan pustaka sistematis",
    ],
    places=["di Indonesia", "di Jawa Barat", "di Kalimantan Timur", "di wilayah pedesaan", "di kota Surabaya"],
    titles=[
        "Analisis {topic} berdasarkan {method}", "Pengaruh {topic} terhadap {topic2}",
        "Kajian {topic} {place}", "Hubungan antara {topic} dan {topic2}",
    ],
    review_titles=["Tinjauan sistematis tentang {topic}", "Perkembangan terkini penelitian {topic}"],
    background=[
        "Dalam beberapa tahun terakhir, {topic} semakin mendapat perhatian dari para peneliti.",
        "Meskipun telah banyak diteliti, hubungan antara {topic} dan {topic2} masih belum dipahami dengan baik.",
        "Penelitian tentang {topic} {place} masih sangat terbatas.",
    ],
    aim=[
        "Penelitian ini bertujuan untuk menganalisis pengaruh {topic} terhadap {topic2}.",
        "Artikel ini membahas {topic} dan kaitannya dengan {topic2}.",
        "Tujuan penelitian ini adalah mengukur {topic} pada {n} lokasi {place}.",
    ],
    method=[
        "Penelitian ini menggunakan {method} dengan melibatkan {n} responden.",
        "Data dikumpulkan antara tahun {y1} dan {y2} melalui {method}.",
        "Pendekatan yang digunakan menggabungkan {method} dengan analisis mendalam terhadap {topic2}.",
    ],
    result=[
        "Hasil penelitian menunjukkan bahwa terdapat hubungan yang signifikan antara {topic} dan {topic2}.",
        "Indikator utama meningkat sebesar {p} persen dibandingkan dengan kondisi awal.",
        "Model yang dikembangkan mampu menjelaskan sebagian besar variasi yang diamati.",
        "Tidak ditemukan perbedaan yang signifikan antara kedua kelompok.",
    ],
    conclusion=[
        "Temuan ini menunjukkan bahwa {topic} perlu diperhatikan dalam pengambilan kebijakan ke depan.",
        "Hasil penelitian ini dapat menjadi dasar bagi penelitian selanjutnya mengenai {topic2}.",
        "Diperlukan penelitian lanjutan dengan sampel yang lebih besar untuk memastikan temuan ini.",
    ],
    words=("Abstrak", "Pendahuluan", "Metode", "Hasil", "Pembahasan", "Daftar Pustaka", "Kata kunci"),
)

_bank(
    code="tr", script="Latn",
    topics=[
        "ergenlerde uyku kalitesi", "hastane atık sularında antibiyotik direnci", "kıyı sediment taşınımı",
        "yeraltı suyunda nitrat kirliliği", "tedarik zinciri dayanıklılığı", "üniversite öğrencilerinde ruh sağlığı",
        "sulak alanlarda biyolojik çeşitlilik", "iklim riski algısı", "sürdürülebilir kentsel ulaşım",
        "evsel atık yönetimi", "fen bilimleri öğretmeni yetiştirme", "yeşil hidrojen üretimi",
    ],
    methods=[
        "randomize kontrollü bir çalışma", "boylamsal kohort çalışması", "yüksek çözünürlüklü uydu görüntüleri",
        "karma yöntemli anket çalışması", "moleküler dinamik simülasyonları", "sistematik literatür taraması",
    ],
    places=["Türkiye'de", "Ege Bölgesi'nde", "İstanbul'da", "kırsal bölgelerde", "Doğu Anadolu'da"],
    titles=[
        "{topic} üzerine bir araştırma", "{topic} ile {topic2} arasındaki ilişki",
        "{place} {topic}: karşılaştırmalı bir analiz", "{topic} konusunun değerlendirilmesi",
    ],
    review_titles=["{topic}: sistematik bir derleme", "{topic} alanındaki güncel gelişmeler"],
    background=[
        "Son yıllarda {topic} konusu giderek daha fazla ilgi görmektedir.",
        "Yapılan çok sayıda çalışmaya rağmen {topic} ile {topic2} arasındaki ilişki hâlâ tam olarak anlaşılamamıştır.",
        "{place} {topic} konusunda yapılan araştırmalar oldukça sınırlıdır.",
    ],
    aim=[
        "Bu çalışmanın amacı, {topic} ile {topic2} arasındaki ilişkiyi incelemektir.",
        "Bu makalede {topic} konusu ayrıntılı olarak ele alınmıştır.",
        "Araştırmada {n} farklı noktada {topic} düzeyinin belirlenmesi amaçlanmıştır.",
    ],
    method=[
        "Çalışmada yöntem olarak {method} kullanılmış ve toplam {n} katılımcıya ulaşılmıştır.",
        "Veriler {y1} ile {y2} yılları arasında toplanmış ve ayrıntılı olarak analiz edilmiştir.",
        "Çalışmada {method} sonuçları ile {topic2} verileri birlikte değerlendirilmiştir.",
    ],
    result=[
        "Bulgular, {topic} ile {topic2} arasında anlamlı bir ilişki olduğunu göstermektedir.",
        "Temel gösterge başlangıç değerine göre yüzde {p} oranında artmıştır.",
        "Geliştirilen model, gözlenen değişimin büyük bölümünü açıklamaktadır.",
        "İki grup arasında istatistiksel olarak anlamlı bir fark bulunmamıştır.",
    ],
    conclusion=[
        "Bu sonuçlar, gelecekteki politikalarda {topic} konusunun dikkate alınması gerektiğini göstermektedir.",
        "Çalışmanın bulguları, {topic2} alanında yapılacak yeni araştırmalar için bir temel oluşturmaktadır.",
        "Bu bulguların daha büyük örneklemlerle doğrulanması gerekmektedir.",
    ],
    words=("Özet", "Giriş", "Yöntem", "Bulgular", "Tartışma", "Kaynaklar", "Anahtar kelimeler"),
)

_bank(
    code="pl", script="Latn",
    topics=[
        "jakości snu młodzieży", "antybiotykooporności w ściekach szpitalnych", "transportu osadów przybrzeżnych",
        "zanieczyszczenia wód podziemnych azotanami", "odporności łańcuchów dostaw", "zdrowia psychicznego studentów",
        "bioróżnorodności terenów podmokłych", "postrzegania ryzyka klimatycznego", "zrównoważonej mobilności miejskiej",
        "gospodarki odpadami komunalnymi", "kształcenia nauczycieli przyrody", "produkcji zielonego wodoru",
    ],
    methods=[
        "randomizowanego badania kontrolowanego", "podłużnego badania kohortowego", "zdjęć satelitarnych wysokiej rozdzielczości",
        "badania ankietowego i wywiadów", "symulacji dynamiki molekularnej", "systematycznego przeglądu literatury",
    ],
    places=["w Polsce", "na Pomorzu", "w województwie małopolskim", "na obszarach wiejskich", "w dużych miastach"],
    titles=[
        "Analiza {topic} z wykorzystaniem {method}", "Rola {topic} w kształtowaniu {topic2}",
        "Ocena {topic} {place}", "Porównanie {topic} i {topic2}",
    ],
    review_titles=["Problematyka {topic}: przegląd systematyczny", "Nowe kierunki badań {topic}"],
    background=[
        "W ostatnich latach problematyka {topic} budzi coraz większe zainteresowanie badaczy.",
        "Mimo wielu prac mechanizmy łączące zagadnienia {topic} i {topic2} pozostają słabo poznane.",
        "Zagadnienie {topic} {place} nie zostało dotychczas dokładnie zbadane.",
    ],
    aim=[
        "Celem pracy była ocena wpływu {topic} na poziom {topic2}.",
        "W niniejszym artykule omówiono zależności pomiędzy zagadnieniami {topic} i {topic2}.",
        "Celem badania było ilościowe określenie {topic} w {n} lokalizacjach.",
    ],
    method=[
        "W badaniu wykorzystano dane z {method}, w którym wzięło udział {n} osób.",
        "Dane zebrano w latach {y1}–{y2} na podstawie {method}.",
        "Zastosowane podejście łączy wyniki {method} ze szczegółową analizą {topic2}.",
    ],
    result=[
        "Uzyskane wyniki wskazują na istotny związek pomiędzy poziomem {topic} a stanem {topic2}.",
        "W porównaniu z wartością wyjściową główny wskaźnik wzrósł o {p}%.",
        "Model wyjaśnia większość zaobserwowanej zmienności.",
        "Nie stwierdzono istotnych różnic pomiędzy badanymi grupami.",
    ],
    conclusion=[
        "Wyniki sugerują, że problematyka {topic} powinna być uwzględniana w przyszłych decyzjach.",
        "Przedstawione wyniki stanowią podstawę do dalszych badań nad zagadnieniem {topic2}.",
        "Potwierdzenie tych obserwacji wymaga badań na większych próbach.",
    ],
    words=("Streszczenie", "Wstęp", "Materiał i metody", "Wyniki", "Dyskusja", "Piśmiennictwo", "Słowa kluczowe"),
)

_bank(
    code="ru", script="Cyrl",
    topics=[
        "качества сна у подростков", "антибиотикорезистентности в больничных сточных водах",
        "переноса прибрежных наносов", "загрязнения подземных вод нитратами", "устойчивости цепочек поставок",
        "психического здоровья студентов", "биоразнообразия водно-болотных угодий", "восприятия климатических рисков",
        "устойчивой городской мобильности", "обращения с твёрдыми коммунальными отходами",
        "подготовки учителей естественных наук", "производства зелёного водорода",
    ],
    methods=[
        "рандомизированного контролируемого исследования", "продольного когортного исследования",
        "спутниковых снимков высокого разрешения", "анкетирования и интервью",
        "молекулярно-динамического моделирования", "систематического обзора литературы",
    ],
    places=["в России", "в Сибири", "на Урале", "в сельских районах", "в крупных городах"],
    titles=[
        "Исследование {topic} с использованием {method}", "Роль {topic} в формировании {topic2}",
        "Оценка {topic} {place}", "Сравнительный анализ {topic} и {topic2}",
    ],
    review_titles=["Проблемы {topic}: систематический обзор", "Современное состояние исследований {topic}"],
    background=[
        "В последние годы проблема {topic} привлекает всё больше внимания исследователей.",
        "Несмотря на многочисленные работы, механизмы взаимосвязи {topic} и {topic2} остаются малоизученными.",
        "Вопросы {topic} {place} изучены недостаточно.",
    ],
    aim=[
        "Целью настоящего исследования было изучение влияния {topic} на показатели {topic2}.",
        "В данной работе рассматриваются особенности {topic} и {topic2}.",
        "Задача исследования состояла в количественной оценке {topic} на {n} участках.",
    ],
    method=[
        "Работа выполнена на основе {method}, в нём приняли участие {n} человек.",
        "Данные собраны в период с {y1} по {y2} год с применением {method}.",
        "Предложенный подход сочетает результаты {method} с подробным анализом {topic2}.",
    ],
    result=[
        "Полученные результаты свидетельствуют о значимой связи между показателями {topic} и {topic2}.",
        "По сравнению с исходным уровнем основной показатель увеличился на {p}%.",
        "Построенная модель объясняет большую часть наблюдаемой изменчивости.",
        "Статистически значимых различий между группами выявлено не было.",
    ],
    conclusion=[
        "Полученные данные позволяют рекомендовать учитывать особенности {topic} при принятии решений.",
        "Результаты работы могут служить основой для дальнейшего изучения {topic2}.",
        "Для подтверждения выводов необходимы исследования на более крупных выборках.",
    ],
    words=("Аннотация", "Введение", "Материалы и методы", "Результаты", "Обсуждение", "Список литературы", "Ключевые слова"),
)

_bank(
    code="zh", script="Hans", joiner="",
    topics=[
        "青少年睡眠质量", "医院废水中的抗生素耐药性", "海岸泥沙输运", "地下水硝酸盐污染", "供应链韧性",
        "大学生心理健康", "湿地生物多样性", "气候风险感知", "可持续城市交通", "城市生活垃圾管理",
        "科学教师培养", "绿色氢气生产",
    ],
    methods=["随机对照试验", "纵向队列研究", "高分辨率卫星影像", "混合方法问卷调查", "分子动力学模拟", "系统文献综述"],
    places=["我国", "长江流域", "华北地区", "西部农村地区", "珠江三角洲"],
    titles=[
        "{topic}研究：基于{method}的证据", "{topic}对{topic2}的影响", "{place}{topic}现状评估",
        "{topic}与{topic2}的比较分析",
    ],
    review_titles=["{topic}研究进展综述", "{topic}的系统评价与荟萃分析"],
    background=[
        "近年来，{topic}受到越来越多的关注。",
        "尽管已有大量研究，{topic}与{topic2}之间的关系仍不清楚。",
        "目前关于{place}{topic}的系统研究还比较缺乏。",
    ],
    aim=[
        "本研究旨在探讨{topic}对{topic2}的影响。",
        "本文分析了{topic}及其与{topic2}的关系。",
        "本研究的目的是在{n}个地点定量评估{topic}。",
    ],
    method=[
        "我们采用{method}的方法，共纳入{n}名研究对象。",
        "数据收集于{y1}年至{y2}年，采用{method}进行分析。",
        "本研究将{method}与{topic2}的详细分析相结合。",
    ],
    result=[
        "结果表明，{topic}与{topic2}之间存在显著相关性。",
        "与基线相比，主要指标提高了{p}%。",
        "该模型解释了观测数据中的大部分变异。",
        "两组之间未发现显著差异。",
    ],
    conclusion=[
        "这些结果表明，未来的政策制定应充分考虑{topic}。",
        "本研究为{topic2}的进一步研究提供了依据。",
        "仍需要更大样本的研究来验证这些结果。",
    ],
    words=("摘要", "引言", "方法", "结果", "讨论", "参考文献", "关键词"),
)

_bank(
    code="ja", script="Jpan", joiner="",
    topics=[
        "青年期の睡眠の質", "病院排水における薬剤耐性菌", "沿岸域の土砂輸送", "地下水の硝酸汚染",
        "サプライチェーンのレジリエンス", "大学生のメンタルヘルス", "湿地の生物多様性", "気候リスクの認知",
        "持続可能な都市交通", "家庭ごみの処理", "理科教員の養成", "グリーン水素の製造",
    ],
    methods=[
        "ランダム化比較試験", "縦断的コホート研究", "高解像度の衛星画像", "質問紙調査と聞き取り調査",
        "分子動力学シミュレーション", "系統的文献レビュー",
    ],
    places=["日本", "北海道", "関西地方", "農村地域", "首都圏"],
    titles=[
        "{topic}に関する研究：{method}による検討", "{topic}が{topic2}に及ぼす影響",
        "{place}における{topic}の評価", "{topic}と{topic2}の比較分析",
    ],
    review_titles=["{topic}に関する研究の動向と課題", "{topic}についての系統的レビュー"],
    background=[
        "近年、{topic}への関心が高まっている。",
        "多くの研究が行われてきたが、{topic}と{topic2}の関係は十分に解明されていない。",
        "{place}における{topic}についての体系的な研究はまだ少ない。",
    ],
    aim=[
        "本研究の目的は、{topic}が{topic2}に与える影響を明らかにすることである。",
        "本稿では、{topic}と{topic2}との関係について検討した。",
        "本研究では、{n}か所において{topic}を定量的に評価した。",
    ],
    method=[
        "{method}を実施し、{n}名の対象者からデータを収集した。",
        "{y1}年から{y2}年までのデータを用いて、{method}を行った。",
        "{method}と{topic2}の詳細な分析を組み合わせた。",
    ],
    result=[
        "その結果、{topic}と{topic2}との間に有意な関連が認められた。",
        "主要な指標はベースラインと比べて{p}%増加した。",
        "このモデルは観測された変動の大部分を説明できることが示された。",
        "二つの群の間に有意な差は見られなかった。",
    ],
    conclusion=[
        "これらの結果から、今後の政策において{topic}を考慮する必要があると考えられる。",
        "本研究は{topic2}に関する今後の研究の基礎となるものである。",
        "より大きな標本を用いたさらなる検討が必要である。",
    ],
    words=("要旨", "はじめに", "方法", "結果", "考察", "参考文献", "キーワード"),
)

_bank(
    code="ko", script="Kore",
    topics=[
        "청소년의 수면의 질", "병원 폐수의 항생제 내성", "해안 퇴적물 이동", "지하수 질산염 오염", "공급망 회복력",
        "대학생의 정신 건강", "습지의 생물 다양성", "기후 위험 인식", "지속 가능한 도시 교통", "생활 폐기물 관리",
        "과학 교사 양성", "그린 수소 생산",
    ],
    methods=["무작위 대조 시험", "종단 코호트 연구", "고해상도 위성 영상", "혼합 방법 설문 조사", "분자 동역학 시뮬레이션", "체계적 문헌 고찰"],
    places=["국내", "수도권", "농촌 지역", "제주도", "동남권"],
    titles=[
        "{topic}에 대한 연구: {method} 결과를 중심으로", "{topic2}에 미치는 {topic}의 영향",
        "{place}의 {topic} 평가", "{topic} 및 {topic2}의 비교 분석",
    ],
    review_titles=["{topic}에 관한 체계적 문헌 고찰", "{topic} 연구의 최근 동향"],
    background=[
        "최근 {topic}에 대한 관심이 높아지고 있다.",
        "많은 연구에도 불구하고 {topic} 및 {topic2}의 관계는 아직 명확하지 않다.",
        "{place}의 {topic}에 대한 체계적인 연구는 아직 부족한 실정이다.",
    ],
    aim=[
        "본 연구의 목적은 {topic2}에 미치는 {topic}의 영향을 분석하는 것이다.",
        "본 논문에서는 {topic} 및 {topic2}의 관계를 검토하였다.",
        "본 연구에서는 {n}개 지역에서 {topic}의 수준을 정량적으로 평가하였다.",
    ],
    method=[
        "연구 방법으로 {method} 설계를 사용하였으며 총 {n}명의 대상자가 참여하였다.",
        "{y1}년부터 {y2}년까지 수집된 자료를 바탕으로 분석을 수행하였다.",
        "{method} 결과와 {topic2}에 대한 상세한 분석을 결합하였다.",
    ],
    result=[
        "분석 결과 {topic} 및 {topic2} 사이에 유의한 상관관계가 나타났다.",
        "주요 지표는 기준선에 비해 {p}% 증가하였다.",
        "이 모형은 관찰된 변동의 대부분을 설명하였다.",
        "두 집단 간에 유의한 차이는 발견되지 않았다.",
    ],
    conclusion=[
        "이러한 결과는 향후 정책 수립 과정에서 {topic}에 대한 고려가 필요함을 시사한다.",
        "본 연구는 {topic2}에 관한 후속 연구의 기초 자료를 제공한다.",
        "이러한 결과를 확인하기 위해 더 큰 표본을 이용한 추가 연구가 필요하다.",
    ],
    words=("초록", "서론", "연구 방법", "결과", "고찰", "참고문헌", "주제어"),
)

_bank(
    code="ar", script="Arab",
    topics=[
        "جودة النوم لدى المراهقين", "مقاومة المضادات الحيوية في مياه الصرف الصحي للمستشفيات", "نقل الرواسب الساحلية",
        "تلوث المياه الجوفية بالنترات", "مرونة سلاسل الإمداد", "الصحة النفسية لطلاب الجامعات",
        "التنوع الحيوي في الأراضي الرطبة", "إدراك المخاطر المناخية", "التنقل الحضري المستدام",
        "إدارة النفايات الصلبة البلدية", "إعداد معلمي العلوم", "إنتاج الهيدروجين الأخضر",
    ],
    methods=[
        "تجربة عشوائية محكومة", "دراسة أترابية طولية", "صور الأقمار الصناعية عالية الدقة", "استبيان بأساليب مختلطة",
        "محاكاة الديناميكا الجزيئية", "مراجعة منهجية للأدبيات",
    ],
    places=["في المملكة العربية السعودية", "في مصر", "في دول الخليج العربي", "في المناطق الريفية", "في شمال أفريقيا"],
    titles=[
        "{topic}: أدلة من {method}", "أثر {topic} على {topic2}", "تقييم {topic} {place}",
        "{topic} و{topic2}: دراسة مقارنة",
    ],
    review_titles=["{topic}: مراجعة منهجية", "التطورات الحديثة في دراسة {topic}"],
    background=[
        "حظي موضوع {topic} باهتمام متزايد في السنوات الأخيرة.",
        "على الرغم من كثرة الأبحاث، لا تزال العلاقة بين {topic} و{topic2} غير مفهومة بشكل كافٍ.",
        "لا يُعرف سوى القليل عن {topic} {place}.",
    ],
    aim=[
        "هدفت هذه الدراسة إلى فحص تأثير {topic} على {topic2}.",
        "نبحث في هذا العمل العلاقة بين {topic} و{topic2}.",
        "كان الهدف من هذا البحث قياس {topic} في {n} موقعًا {place}.",
    ],
    method=[
        "استخدمنا {method} شارك فيها {n} مشاركًا.",
        "جُمعت البيانات خلال الفترة من {y1} إلى {y2} من خلال {method}.",
        "يجمع المنهج المتبع بين {method} وتحليل مفصل لموضوع {topic2}.",
    ],
    result=[
        "أظهرت النتائج وجود ارتباط ذي دلالة إحصائية بين {topic} و{topic2}.",
        "لاحظنا زيادة بنسبة {p}% في المؤشر الرئيسي مقارنة بخط الأساس.",
        "فسّر النموذج معظم التباين الملاحظ في البيانات.",
        "لم تُلاحظ فروق ذات دلالة إحصائية بين المجموعتين.",
    ],
    conclusion=[
        "تشير هذه النتائج إلى ضرورة أخذ {topic} في الاعتبار عند اتخاذ القرارات المستقبلية.",
        "توفر نتائجنا أساسًا لمزيد من البحث حول {topic2}.",
        "هناك حاجة إلى دراسات إضافية لتأكيد هذه الملاحظات على عينات أكبر.",
    ],
    words=("الملخص", "المقدمة", "المنهجية", "النتائج", "المناقشة", "المراجع", "الكلمات المفتاحية"),
)


def _fill(template: str, rng: random.Random, bank: Bank, topic: str, topic2: str, method: str, year: int) -> str:
    """Fill one template; numbers come from the paper's RNG so abstracts differ in detail."""
    r = rng.random  # int(r() * k) instead of randint/choice: this runs millions of times
    y1 = year - 2 - int(r() * 7)
    places = bank.places
    text = template.format(
        topic=topic, topic2=topic2, method=method, place=places[int(r() * len(places))],
        n=12 + int(r() * 2389), p=3 + int(r() * 66), y1=y1, y2=y1 + 1 + int(r() * 4),
    )
    return text[:1].upper() + text[1:]


@dataclass
class PaperText:
    """The words of one paper: enough for metadata, landing pages and PDFs."""

    title: str
    abstract_sentences: list[str]
    concept: int
    concept2: int

    def abstract(self, joiner: str) -> str:
        return joiner.join(self.abstract_sentences)


def make_text(rng: random.Random, lang: str, year: int, review: bool = False, concept: int | None = None) -> PaperText:
    """Title and a 3–6 sentence abstract in `lang`, combined from the bank by `rng`.

    The abstract always keeps one aim and one result sentence (the moves every real abstract
    has) and adds background, method, a second result and a conclusion at random. `concept`
    fixes the main topic (the journal's field) instead of drawing it.
    """
    bank = BANKS[lang]
    c1 = rng.randrange(len(bank.topics)) if concept is None else concept % len(bank.topics)
    c2 = rng.randrange(len(bank.topics) - 1)
    if c2 >= c1:
        c2 += 1
    topic, topic2 = bank.topics[c1], bank.topics[c2]
    method = rng.choice(bank.methods)
    title_t = rng.choice(bank.review_titles if review else bank.titles)
    title = _fill(title_t, rng, bank, topic, topic2, method, year)
    moves: list[tuple[str, ...]] = []
    if rng.random() < 0.75:
        moves.append(bank.background)
    moves.append(bank.aim)
    if rng.random() < 0.8:
        moves.append(bank.method)
    moves.append(bank.result)
    if rng.random() < 0.5:
        moves.append(bank.result)
    if rng.random() < 0.7 or len(moves) < 3:
        moves.append(bank.conclusion)
    sentences: list[str] = []
    used: set[str] = set()
    for pool in moves:
        template = pool[int(rng.random() * len(pool))]
        if template in used:  # the second result sentence must not repeat the first
            template = pool[(pool.index(template) + 1) % len(pool)]
        used.add(template)
        sentences.append(_fill(template, rng, bank, topic, topic2, method, year))
    return PaperText(title=title, abstract_sentences=sentences, concept=c1, concept2=c2)


def make_paragraphs(rng: random.Random, lang: str, year: int, count: int) -> list[str]:
    """`count` paragraphs of full text (4–7 sentences each) for landing pages and PDFs."""
    bank = BANKS[lang]
    pools = (bank.background, bank.aim, bank.method, bank.result, bank.result, bank.conclusion)
    out = []
    for _ in range(count):
        topic, topic2 = rng.sample(bank.topics, 2)
        method = rng.choice(bank.methods)
        sentences = [_fill(rng.choice(rng.choice(pools)), rng, bank, topic, topic2, method, year)
                     for _ in range(rng.randint(4, 7))]
        out.append(bank.joiner.join(sentences))
    return out


# Romanized author names by naming culture; metadata sources mostly carry Latin-script names.
_NAMES: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "en": (("James", "Sarah", "Michael", "Emily", "David", "Laura", "Robert", "Anna"),
           ("Smith", "Johnson", "Brown", "Taylor", "Wilson", "Clarke", "Evans", "Walker", "Hughes")),
    "de": (("Lukas", "Anna", "Jonas", "Lea", "Felix", "Katharina"), ("Müller", "Schmidt", "Schneider", "Fischer", "Weber", "Becker")),
    "fr": (("Camille", "Louis", "Léa", "Hugo", "Chloé", "Julien"), ("Martin", "Bernard", "Dubois", "Lefèvre", "Moreau", "Laurent")),
    "es": (("María", "José", "Lucía", "Javier", "Carmen", "Diego"), ("García", "Fernández", "López", "Martínez", "Sánchez", "Romero")),
    "pt": (("João", "Ana", "Pedro", "Mariana", "Lucas", "Beatriz"), ("Silva", "Santos", "Oliveira", "Souza", "Pereira", "Costa")),
    "it": (("Marco", "Giulia", "Luca", "Francesca", "Matteo", "Chiara"), ("Rossi", "Russo", "Ferrari", "Esposito", "Bianchi", "Romano")),
    "nl": (("Daan", "Emma", "Sem", "Sophie", "Lars", "Julia"), ("de Jong", "Jansen", "de Vries", "van Dijk", "Bakker", "Visser")),
    "id": (("Budi", "Siti", "Agus", "Dewi", "Rizki", "Putri"), ("Santoso", "Wijaya", "Saputra", "Hidayat", "Nugroho", "Lestari")),
    "tr": (("Mehmet", "Ayşe", "Mustafa", "Elif", "Emre", "Zeynep"), ("Yılmaz", "Kaya", "Demir", "Şahin", "Çelik", "Aydın")),
    "pl": (("Piotr", "Anna", "Tomasz", "Katarzyna", "Michał", "Agnieszka"), ("Nowak", "Kowalski", "Wiśniewski", "Wójcik", "Kamiński", "Lewandowska")),
    "ru": (("Ivan", "Elena", "Dmitry", "Olga", "Sergey", "Natalia"), ("Ivanov", "Smirnova", "Kuznetsov", "Popova", "Sokolov", "Volkova")),
    "zh": (("Wei", "Jing", "Lei", "Fang", "Yang", "Xiaoming"), ("Wang", "Li", "Zhang", "Liu", "Chen", "Zhao")),
    "ja": (("Hiroshi", "Yuki", "Takashi", "Akiko", "Kenji", "Naoko"), ("Sato", "Suzuki", "Takahashi", "Tanaka", "Watanabe", "Ito")),
    "ko": (("Minjun", "Seoyeon", "Jihoon", "Jiwoo", "Hyunwoo", "Soyeon"), ("Kim", "Lee", "Park", "Choi", "Jung", "Kang")),
    "ar": (("Ahmed", "Fatima", "Mohamed", "Layla", "Omar", "Nour"), ("Hassan", "Ali", "Ibrahim", "Mahmoud", "Al-Sayed", "Haddad")),
}


def make_authors(rng: random.Random, lang: str) -> list[dict[str, str]]:
    """1–6 authors as Crossref/Unpaywall `{"given", "family", "sequence"}` dicts."""
    given, family = _NAMES.get(lang, _NAMES["en"])
    authors: list[dict[str, str]] = []
    seen: set[tuple[str, str]] = set()
    for _ in range(rng.choice((1, 2, 2, 3, 3, 4, 5, 6))):
        name = (given[int(rng.random() * len(given))], family[int(rng.random() * len(family))])
        if name in seen:  # one person appears once in a byline
            continue
        seen.add(name)
        authors.append({"given": name[0], "family": name[1], "sequence": "first" if not authors else "additional"})
    return authors
